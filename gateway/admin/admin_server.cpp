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
#include <tuple>
#include <utility>

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
// A streaming reply's kernel send buffer (Linux doubles it): small, so a client that stops
// reading shows up in its queue in the event feed (which drops it) instead of in kernel memory.
constexpr int kStreamSendBuffer = 16 * 1024;

}  // namespace

struct BodyWriter::State {
  bool closed = false;    ///< the connection is over: the peer closed, a write failed, close()
  bool finished = false;  ///< the reply is over: the socket may be gone, nothing may touch it
  std::array<char, 512> sink{};  ///< what the peer sends after its request: discarded
  std::function<void()> on_close;

  void end() {
    if (closed) {
      return;
    }
    closed = true;
    if (on_close) {
      auto fn = std::exchange(on_close, nullptr);
      fn();
    }
  }
};

namespace {

// Reads (and discards) until the peer closes, so a producer waiting for news learns at once
// that its client left, not at its next write. The raw socket, not the tcp_stream: the stream's
// write timeout must not apply to this never-ending read. The socket lives in serve()'s frame:
// `finished` is set before it goes, and a handler that sees it touches nothing.
void watch_peer(net::ip::tcp::socket& socket, const std::shared_ptr<BodyWriter::State>& state) {
  socket.async_read_some(net::buffer(state->sink),
                         [&socket, state](const beast::error_code& ec, std::size_t) {
                           if (state->finished) {
                             return;
                           }
                           if (ec) {
                             state->end();
                             return;
                           }
                           watch_peer(socket, state);
                         });
}

}  // namespace

namespace detail {

/// Marks a streaming reply over when AdminServer::stream() leaves, however it leaves. (Not in
/// the unnamed namespace: a coroutine frame holds it, and GCC warns about frames of unity
/// builds that hold internal types.)
struct StreamFinishGuard {
  explicit StreamFinishGuard(BodyWriter::State& s) : state(s) {}
  StreamFinishGuard(const StreamFinishGuard&) = delete;
  StreamFinishGuard& operator=(const StreamFinishGuard&) = delete;
  ~StreamFinishGuard() {
    state.finished = true;
    state.on_close = nullptr;
  }
  BodyWriter::State& state;
};

}  // namespace detail

net::awaitable<bool> BodyWriter::write(const std::vector<net::const_buffer>& buffers) {
  if (state_->closed) {
    co_return false;
  }
  if (net::buffer_size(buffers) == 0) {
    co_return true;  // an empty chunk would end the body
  }
  stream_.expires_after(kTimeout);
  beast::error_code ec;
  if (chunked_) {
    std::tie(ec, std::ignore) =
        co_await net::async_write(stream_, http::make_chunk(buffers), kAsTuple);
  } else {
    std::tie(ec, std::ignore) = co_await net::async_write(stream_, buffers, kAsTuple);
  }
  stream_.expires_never();  // waiting for news between writes is not a stalled write
  if (ec) {
    state_->end();
  }
  co_return !state_->closed;
}

net::awaitable<bool> BodyWriter::write(std::string_view text) {
  const std::vector<net::const_buffer> buffers{net::buffer(text)};
  co_return co_await write(buffers);
}

bool BodyWriter::is_closed() const noexcept {
  return state_->closed;
}

void BodyWriter::close() {
  if (state_->finished) {
    return;
  }
  // SO_LINGER {on, 0}: close() sends a reset and frees the send buffer. A graceful close would
  // leave the unsent events and the FIN to zero-window probes, whose backoff can keep a client
  // that reads again waiting for many seconds to learn it was dropped.
  beast::error_code ignored;
  stream_.socket().set_option(net::socket_base::linger(true, 0), ignored);
  stream_.close();  // a write in progress completes with operation_aborted
  state_->end();
}

void BodyWriter::on_close(std::function<void()> fn) {
  state_->on_close = std::move(fn);
}

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
    Reply reply = co_await handler_(req, peer);
    if (reply.producer) {
      co_await this->stream(stream, req, std::move(reply));
      break;
    }
    Response& res = reply.head;
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

// docs/admin-api.md "Streaming replies": no Content-Length; chunked for HTTP/1.1, so the
// client can tell a complete reply (the last chunk) from a cut one; for HTTP/1.0 the body ends
// when the connection does. Either way the connection closes after it: a stream's end is the
// server's choice (drain, a dropped client), and a fresh connection costs the client nothing.
net::awaitable<void> AdminServer::stream(beast::tcp_stream& stream, const Request& req,
                                         Reply reply) {
  Response& head = reply.head;
  head.set(http::field::server, "sluice-admin");
  head.body().clear();
  head.erase(http::field::content_length);
  head.keep_alive(false);
  const bool chunked = req.version() >= 11;
  if (chunked) {
    head.chunked(true);
  }
  beast::error_code ignored;
  stream.socket().set_option(net::socket_base::send_buffer_size(kStreamSendBuffer), ignored);
  http::response_serializer<http::string_body> serializer(head);
  stream.expires_after(kTimeout);
  auto [ec, n] = co_await http::async_write_header(stream, serializer, kAsTuple);
  stream.expires_never();
  if (ec) {
    co_return;
  }
  auto state = std::make_shared<BodyWriter::State>();
  const detail::StreamFinishGuard guard(*state);
  watch_peer(stream.socket(), state);
  BodyWriter writer(stream, chunked, state);
  co_await reply.producer(writer);
  if (chunked && !state->closed) {
    stream.expires_after(kTimeout);
    co_await net::async_write(stream, http::make_chunk_last(), kAsTuple);
  }
}

}  // namespace sluice::admin
