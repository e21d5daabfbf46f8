// SPDX-License-Identifier: Apache-2.0
#include "gateway/admin/admin_server.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <string>

namespace sluice::admin {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using namespace std::chrono_literals;

constexpr auto kAsTuple = net::as_tuple(net::use_awaitable);
constexpr std::uint32_t kMaxHeader = 16 * 1024;
constexpr std::uint64_t kMaxBody = std::uint64_t{1024} * 1024;
constexpr auto kTimeout = 10s;
constexpr auto kLingerTime = 2s;                                 // after an early 413/431
constexpr std::uint64_t kLingerBytes = std::uint64_t{8} << 20U;  // discarded at most

}  // namespace

Response json_error(const Request& request, http::status status, std::string_view reason) {
  Response res(status, request.version());
  res.set(http::field::content_type, "application/json");
  res.body() = std::string(R"({"error":")") + std::string(reason) + R"("})";
  res.keep_alive(request.keep_alive());
  res.prepare_payload();
  return res;
}

Response text(const Request& request, http::status status, std::string body) {
  Response res(status, request.version());
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(body);
  res.keep_alive(request.keep_alive());
  res.prepare_payload();
  return res;
}

AdminServer::AdminServer(net::ip::tcp::acceptor acceptor, Handler handler,
                         std::shared_ptr<spdlog::logger> log)
    : acceptor_(std::move(acceptor)), handler_(std::move(handler)), log_(std::move(log)) {}

void AdminServer::start() {
  net::co_spawn(acceptor_.get_executor(), accept_loop(), log_stray_exception());
}

std::function<void(std::exception_ptr)> AdminServer::log_stray_exception() const {
  return [log = log_](const std::exception_ptr& e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        log->error("admin coroutine failed error={}", ex.what());
      }
    }
  };
}

void AdminServer::stop() {
  beast::error_code ignored;
  acceptor_.close(ignored);
}

net::awaitable<void> AdminServer::accept_loop() {
  auto self = shared_from_this();
  for (;;) {
    auto [ec, socket] = co_await acceptor_.async_accept(kAsTuple);
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) {
        co_return;
      }
      log_->warn("admin accept failed error={}", ec.message());
      continue;
    }
    net::co_spawn(acceptor_.get_executor(), serve(std::move(socket)), log_stray_exception());
  }
}

net::awaitable<void> AdminServer::linger(beast::tcp_stream& stream) {
  // Lingering close (as nginx does after an early error reply): the client is likely still
  // sending the body we refused. Closing now, with its bytes unread, would reset the connection
  // and the client could lose the 413 before reading it; so stop sending, then read and discard
  // what still comes, up to a cap in bytes and time.
  beast::error_code ignored;
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  std::array<char, 16384> sink{};
  std::uint64_t drained = 0;
  stream.expires_after(kLingerTime);
  while (drained < kLingerBytes) {
    auto [ec, n] = co_await stream.async_read_some(net::buffer(sink), kAsTuple);
    if (ec) {
      break;
    }
    drained += n;
  }
}

net::awaitable<void> AdminServer::serve(net::ip::tcp::socket socket) {
  auto self = shared_from_this();
  beast::error_code peer_ec;
  const net::ip::tcp::endpoint peer = socket.remote_endpoint(peer_ec);
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxHeader);
    parser.body_limit(kMaxBody);
    stream.expires_after(kTimeout);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, kAsTuple);
    if (ec) {
      if (ec == http::error::body_limit || ec == http::error::header_limit) {
        Request req;
        req.version(11);
        auto res = json_error(
            req,
            ec == http::error::body_limit ? http::status::payload_too_large
                                          : http::status::request_header_fields_too_large,
            ec == http::error::body_limit ? "payload_too_large" : "header_too_large");
        res.keep_alive(false);
        stream.expires_after(kTimeout);
        co_await http::async_write(stream, res, kAsTuple);
        co_await linger(stream);
      }
      break;
    }
    const Request& req = parser.get();
    Response res = co_await handler_(req, peer);
    res.set(http::field::server, "sluice-admin");
    const bool keep = res.keep_alive();
    stream.expires_after(kTimeout);
    auto [wec, wn] = co_await http::async_write(stream, res, kAsTuple);
    if (wec || !keep) {
      break;
    }
  }
  beast::error_code ignored;
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
}

}  // namespace sluice::admin
