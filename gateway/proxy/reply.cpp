// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/reply.hpp"

#include <string>

namespace sluice::proxy {

net::awaitable<Replied> reply_error(beast::tcp_stream& down, GatewayError error,
                                    const ReplyOptions& options, core::Duration timeout) {
  const ErrorInfo& e = info(error);
  http::response<http::string_body> res(e.status, options.version == 10 ? 10 : 11);
  res.set(http::field::server, "sluice");
  res.set(http::field::content_type, "application/json");
  if (!options.request_id.empty()) {
    res.set("X-Request-Id", options.request_id);
  }
  if (!options.allow.empty()) {
    res.set(http::field::allow, options.allow);
  }
  if (options.retry_after_s > 0) {
    res.set(http::field::retry_after, std::to_string(options.retry_after_s));
  }
  for (const ExtraField& f : options.fields) {
    res.set(f.name, f.value);
  }
  if (options.body.empty()) {
    res.body() = std::string(R"({"error":")") + std::string(e.reason) + R"("})";
  } else {
    res.body() = options.body;
  }
  res.prepare_payload();
  res.keep_alive(options.keep_alive);
  down.expires_after(timeout);
  if (options.head_request) {
    http::response_serializer<http::string_body> serializer(res);
    auto [ec, n] = co_await http::async_write_header(down, serializer, kAsTuple);
    co_return ec ? Replied{} : Replied{res.result_int(), 0};
  }
  auto [ec, n] = co_await http::async_write(down, res, kAsTuple);
  co_return ec ? Replied{} : Replied{res.result_int(), res.body().size()};
}

}  // namespace sluice::proxy
