// SPDX-License-Identifier: Apache-2.0
#include "tests/support/recording_upstream.hpp"

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <memory>

#include "tests/support/accept_loop.hpp"
#include "tests/support/as_tuple.hpp"

namespace sluice::testing {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

/// One accepted connection; runs on the upstream's thread.
struct RecordingUpstream::Connection {
  RecordingUpstream& upstream;
  beast::tcp_stream stream;
  std::string data;  // received, not yet part of a recorded request

  /// The length of the request at the start of `data` once it is all there, else 0.
  /// Sets `bad` when the bytes can never form one.
  static std::size_t complete_request(std::string_view bytes, bool& bad) {
    http::request_parser<http::string_body> parser;
    parser.eager(true);
    parser.header_limit(1024 * 1024);
    parser.body_limit(boost::none);
    std::size_t used = 0;
    while (!parser.is_done() && used < bytes.size()) {
      beast::error_code ec;
      const std::size_t n = parser.put(net::buffer(bytes.data() + used, bytes.size() - used), ec);
      if (ec == http::error::need_more) {
        return 0;
      }
      if (ec) {
        bad = true;
        return 0;
      }
      used += n;
    }
    return parser.is_done() ? used : 0;
  }

  net::awaitable<void> run() {
    std::array<char, 16384> chunk{};
    for (;;) {
      stream.expires_after(std::chrono::hours(24));  // the destructor ends everything
      auto [ec, n] = co_await stream.async_read_some(net::buffer(chunk), kAsTuple);
      if (ec) {
        co_return;
      }
      data.append(chunk.data(), n);
      for (;;) {
        bool bad = false;
        const std::size_t length = complete_request(data, bad);
        if (bad) {
          upstream.record(std::move(data));  // kept for the test to see, then hung up on
          co_return;
        }
        if (length == 0) {
          break;
        }
        upstream.record(data.substr(0, length));
        data.erase(0, length);
        const Reply reply = upstream.current_reply();
        stream.expires_after(std::chrono::seconds(5));
        if (auto [wec, wn] = co_await net::async_write(stream, net::buffer(reply.bytes), kAsTuple);
            wec) {
          co_return;
        }
        if (reply.close) {
          beast::error_code ignored;
          stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
          stream.expires_after(std::chrono::seconds(1));
          while (!std::get<0>(co_await stream.async_read_some(net::buffer(chunk), kAsTuple))) {
          }
          co_return;
        }
      }
    }
  }
};

RecordingUpstream::RecordingUpstream() {
  const tcp::endpoint endpoint{net::ip::address_v4::loopback(), 0};
  acceptor_.open(endpoint.protocol());
  acceptor_.bind(endpoint);
  acceptor_.listen();
  port_ = acceptor_.local_endpoint().port();
  spawn_accept_loop(acceptor_, [this](tcp::socket socket) {
    {
      const std::lock_guard lock(mutex_);
      ++accepted_;
    }
    auto connection =
        std::make_shared<Connection>(Connection{*this, beast::tcp_stream(std::move(socket)), {}});
    net::co_spawn(
        ioc_, [connection]() -> net::awaitable<void> { co_await connection->run(); },
        net::detached);
  });
  thread_ = std::thread([this] { ioc_.run(); });
}

RecordingUpstream::~RecordingUpstream() {
  ioc_.stop();
  if (thread_.joinable()) {
    thread_.join();
  }
}

std::string RecordingUpstream::endpoint() const {
  return "127.0.0.1:" + std::to_string(port_);
}

void RecordingUpstream::reply_with(Reply reply) {
  const std::lock_guard lock(mutex_);
  reply_ = std::move(reply);
}

RecordingUpstream::Reply RecordingUpstream::current_reply() const {
  const std::lock_guard lock(mutex_);
  return reply_;
}

void RecordingUpstream::record(std::string request) {
  const std::lock_guard lock(mutex_);
  requests_.push_back(std::move(request));
  changed_.notify_all();
}

std::vector<std::string> RecordingUpstream::requests() const {
  const std::lock_guard lock(mutex_);
  return requests_;
}

std::size_t RecordingUpstream::request_count() const {
  const std::lock_guard lock(mutex_);
  return requests_.size();
}

std::size_t RecordingUpstream::accepted() const {
  const std::lock_guard lock(mutex_);
  return accepted_;
}

bool RecordingUpstream::wait_for_requests(std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
}

}  // namespace sluice::testing
