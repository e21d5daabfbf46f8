// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string_view>

#include "gateway/http2/connection.hpp"
#include "gateway/http2/stream_channel.hpp"
#include "gateway/proxy/session/server_session.hpp"

// One HTTP/2 stream as one request through the data path (docs/http2.md, "One stream, one
// HTTP/1.1 request"): the stream seen as a client stream, and the session's steps run once over
// it. The connection around the streams is h2_session.hpp.
namespace sluice::proxy {

/// A stream of an HTTP/2 connection as the data path's client stream (docs/http2.md): the
/// exchange's writes become the stream's response, its reads the request body.
template <>
struct StreamOps<http2::StreamChannel> {
  static void cancel(http2::StreamChannel& s) noexcept { s.stream().cancel(); }
  /// The response is complete as written (one delimited by the close ends here).
  static void shutdown_send(http2::StreamChannel& s) noexcept { s.stream().end_response(); }
  static void close(http2::StreamChannel& s) noexcept { s.stream().end_response(); }
  [[nodiscard]] static bool is_open(const http2::StreamChannel& s) noexcept {
    return !s.stream().closed();
  }
  /// The response bytes that fit the stream's buffer now (parsed into frames at once).
  template <typename Buffers>
  static std::optional<std::size_t> write_now(http2::StreamChannel& s, const Buffers& buffers,
                                              boost::system::error_code& ec) {
    return s.stream().write_now(buffers, ec);
  }
  static void prepare(http2::StreamChannel& /*s*/) noexcept {}
};

/// One stream's request, from its head to its log line: the steps of run_session() over a
/// StreamChannel, once. The stream and `env` outlive the call; runs on the worker's thread.
template <typename Up>
Task<void> serve_h2_stream(http2::Stream& stream, const Peer& peer, SessionEnv& env,
                           UpstreamContext<Up>& up) {
  http2::StreamChannel channel(stream);
  beast::flat_buffer buffer;
  Deadline read_deadline(env.sweep, &detail::cancel_stream<http2::StreamChannel>, &channel);
  Deadline write_deadline(env.sweep, &detail::cancel_stream<http2::StreamChannel>, &channel);
  const Downstream<http2::StreamChannel> down{channel, buffer, read_deadline, write_deadline, peer};
  const std::shared_ptr<const ThreadView> view = env.view.current();
  auto lease = env.contexts.acquire();
  RequestContext& ctx = begin_request(*lease, *view->snapshot, env);
  ctx.http2 = true;
  stream.settle_request_framing();  // a body already here whole goes up with its length
  const std::string_view head = stream.head_bytes();
  net::buffer_copy(buffer.prepare(head.size()), net::buffer(head.data(), head.size()));
  buffer.commit(head.size());
  stream.take_buffered(buffer);  // body bytes already here: a small body goes up whole
  std::optional<GatewayError> refused;
  bool await_store = false;
  if (stream.oversized()) {
    ctx.request_id.generate();
    refused = GatewayError::kHeaderTooLarge;
  } else {
    refused = intake(ctx, buffered(buffer).substr(0, head.size()), env, peer, await_store);
  }
  if (await_store) {
    const limiter::LimitDecision decision =
        co_await env.services.store.decide(env.store_slot, limit_policy(ctx, *route_limit(ctx)),
                                           ctx.user, net::use_awaitable_t<Executor>{});
    refused = after_limit(ctx, decision, env);
  }
  if (refused) {
    co_await detail::answer(ctx, channel, buffer, write_deadline, env, *refused);
  } else {
    co_await exchange(ctx, down, up);
  }
  record_step(ctx, env.services.clock.now(), peer, env.access_log);
}

}  // namespace sluice::proxy
