// SPDX-License-Identifier: Apache-2.0
#include "tests/support/raw_peer.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <functional>
#include <tuple>

#include "tests/support/accept_loop.hpp"
#include "tests/support/as_tuple.hpp"

namespace sluice::testing {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr std::string_view kOkResponse =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
    "Connection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\nok\n";
constexpr std::string_view kPartialHeader =
    "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\n";

net::awaitable<void> pause(std::chrono::milliseconds duration) {
  const auto executor = co_await net::this_coro::executor;
  net::steady_timer timer(executor, duration);
  co_await timer.async_wait(kAsTuple);
}

/// FIN, then `after_fin` (if any), then read and drop until the peer closes too (or 1 s):
/// closing with unread bytes would turn the FIN into a reset.
net::awaitable<void> close_gracefully(beast::tcp_stream& stream,
                                      const std::function<void()>& after_fin = {}) {
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  if (after_fin) {
    after_fin();
  }
  std::array<char, 4096> sink{};
  stream.expires_after(std::chrono::seconds(1));
  for (;;) {
    auto [ec, n] = co_await stream.async_read_some(net::buffer(sink), kAsTuple);
    if (ec) {
      break;
    }
  }
  stream.close();
}

void reset(beast::tcp_stream& stream) {
  beast::error_code ignored;
  stream.socket().set_option(net::socket_base::linger(true, 0), ignored);
  stream.close();
}

}  // namespace

/// One accepted connection's behaviour; runs on the peer thread.
struct RawPeer::Connection {
  RawPeer& peer;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  beast::error_code last_read_error;  // of the last read_request

  /// Reads one request (header only, or all of it); false on error or timeout.
  net::awaitable<bool> read_request(bool whole, std::chrono::steady_clock::duration timeout) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(1024 * 1024);
    parser.body_limit(boost::none);
    stream.expires_after(timeout);
    beast::error_code ec;
    if (whole) {
      std::tie(ec, std::ignore) = co_await http::async_read(stream, buffer, parser, kAsTuple);
    } else {
      std::tie(ec, std::ignore) =
          co_await http::async_read_header(stream, buffer, parser, kAsTuple);
    }
    if (!ec) {
      peer.count_request();
    }
    last_read_error = ec;
    co_return !ec;
  }

  net::awaitable<void> run() {
    constexpr auto kForever = std::chrono::hours(24);  // the destructor ends everything
    switch (peer.mode_) {
      case Mode::kNeverAnswer:
        if (co_await read_request(false, kForever)) {
          std::array<char, 4096> sink{};
          stream.expires_never();
          for (;;) {
            if (auto [ec, n] = co_await stream.async_read_some(net::buffer(sink), kAsTuple); ec) {
              break;
            }
          }
        }
        break;
      case Mode::kCloseAfterRequest:
      case Mode::kResetAfterRequest:
        if (co_await read_request(false, kForever)) {
          if (peer.mode_ == Mode::kResetAfterRequest) {
            reset(stream);
          } else {
            co_await close_gracefully(stream);
          }
        }
        break;
      case Mode::kPartialBodyThenReset:
      case Mode::kPartialBodyThenClose:
        co_await partial_body(peer.mode_ == Mode::kPartialBodyThenReset);
        break;
      case Mode::kRespondOkThenCloseIdle:
        co_await respond_until_idle();
        break;
      case Mode::kRefuse:
        break;
    }
  }

  net::awaitable<void> partial_body(bool rst) {
    if (!co_await read_request(false, std::chrono::hours(24))) {
      co_return;
    }
    const std::string bytes = std::string(kPartialHeader) + std::string(1000, 'x');
    stream.expires_after(std::chrono::seconds(5));
    if (auto [ec, n] = co_await net::async_write(stream, net::buffer(bytes), kAsTuple); ec) {
      co_return;
    }
    co_await pause(kPartialPause);
    if (rst) {
      reset(stream);
    } else {
      co_await close_gracefully(stream);
    }
  }

  net::awaitable<void> respond_until_idle() {
    auto timeout = std::chrono::steady_clock::duration(std::chrono::hours(24));
    while (co_await read_request(true, timeout)) {
      stream.expires_after(std::chrono::seconds(5));
      if (auto [ec, n] = co_await net::async_write(stream, net::buffer(kOkResponse), kAsTuple);
          ec) {
        co_return;
      }
      timeout = peer.idle_close_;  // from now on, idleness ends the connection
    }
    if (last_read_error == beast::error::timeout) {
      co_await close_gracefully(stream, [this] { peer.count_idle_close(); });
    } else {
      co_await close_gracefully(stream);
    }
  }
};

RawPeer::RawPeer(Mode mode, std::chrono::milliseconds idle_close)
    : mode_(mode), idle_close_(idle_close) {
  const tcp::endpoint endpoint{net::ip::address_v4::loopback(), 0};
  acceptor_.open(endpoint.protocol());
  acceptor_.bind(endpoint);
  port_ = acceptor_.local_endpoint().port();
  if (mode_ == Mode::kRefuse) {
    return;  // bound but not listening: connections get RST
  }
  acceptor_.listen();
  spawn_accept_loop(acceptor_, [this](tcp::socket socket) {
    count_accepted();
    net::co_spawn(
        ioc_,
        [connection = Connection{*this, beast::tcp_stream(std::move(socket)), {}, {}}]() mutable
        -> net::awaitable<void> { co_await connection.run(); },
        net::detached);
  });
  thread_ = std::thread([this] { ioc_.run(); });
}

RawPeer::~RawPeer() {
  ioc_.stop();  // connections and their coroutines are destroyed with ioc_, after the join
  if (thread_.joinable()) {
    thread_.join();
  }
}

std::string RawPeer::endpoint() const {
  return "127.0.0.1:" + std::to_string(port_);
}

void RawPeer::count_accepted() {
  const std::lock_guard lock(mutex_);
  ++accepted_;
  changed_.notify_all();
}

void RawPeer::count_request() {
  const std::lock_guard lock(mutex_);
  ++requests_;
  changed_.notify_all();
}

void RawPeer::count_idle_close() {
  const std::lock_guard lock(mutex_);
  ++idle_closes_;
  changed_.notify_all();
}

std::size_t RawPeer::idle_closes() const {
  const std::lock_guard lock(mutex_);
  return idle_closes_;
}

bool RawPeer::wait_for_idle_closes(std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return idle_closes_ >= n; });
}

std::size_t RawPeer::accepted() const {
  const std::lock_guard lock(mutex_);
  return accepted_;
}

std::size_t RawPeer::requests() const {
  const std::lock_guard lock(mutex_);
  return requests_;
}

bool RawPeer::wait_for_accepted(std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return accepted_ >= n; });
}

bool RawPeer::wait_for_requests(std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return requests_ >= n; });
}

std::uint16_t RawPeer::refused_port() {
  net::io_context ioc;
  tcp::acceptor acceptor(ioc);
  const tcp::endpoint endpoint{net::ip::address_v4::loopback(), 0};
  acceptor.open(endpoint.protocol());
  acceptor.bind(endpoint);
  return acceptor.local_endpoint().port();
}

}  // namespace sluice::testing
