// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <exception>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace sluice::admin {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

/// The body of a streaming reply as its producer writes it (docs/admin-api.md "Streaming
/// replies"): chunks of HTTP/1.1 chunked encoding (raw bytes for an HTTP/1.0 client, whose
/// reply ends when the connection closes). Every write must complete within 10 s, or the
/// connection closes. Confined to the admin thread; lives until the producer returns.
class BodyWriter {
 public:
  struct State;
  BodyWriter(boost::beast::tcp_stream& stream, bool chunked, std::shared_ptr<State> state)
      : stream_(stream), chunked_(chunked), state_(std::move(state)) {}

  /// Sends `buffers` as one piece. False when the connection is gone (closed by either side,
  /// failed, or timed out): the producer should return.
  boost::asio::awaitable<bool> write(const std::vector<boost::asio::const_buffer>& buffers);
  boost::asio::awaitable<bool> write(std::string_view text);
  /// True once the peer closed, a write failed, or close() was called.
  [[nodiscard]] bool is_closed() const noexcept;
  /// Closes the connection now, even during a write (a producer giving up on a slow client),
  /// with a reset: what the kernel still holds for the peer is discarded at once rather than
  /// left to a peer that does not read (docs/operating.md "Live events").
  void close();
  /// Runs once when the connection ends while the producer waits for something else (the peer
  /// closed it), so the producer can stop waiting. Must stay callable while set.
  void on_close(std::function<void()> fn);

 private:
  boost::beast::tcp_stream& stream_;
  bool chunked_;
  std::shared_ptr<State> state_;
};

/// Writes a streaming reply's body until it returns; the server then ends the reply.
using BodyProducer = std::function<boost::asio::awaitable<void>(BodyWriter&)>;

/// What a handler answers: a whole response, or (with `producer`) a head whose body the producer
/// streams; the server then sends the head without Content-Length, chunked for HTTP/1.1, and
/// closes the connection when the producer returns.
struct Reply {
  Reply() = default;  // co_spawn's result types must be default-constructible
  Reply(Response response) : head(std::move(response)) {}  // NOLINT(google-explicit-constructor)
  Reply(Response response, BodyProducer body)
      : head(std::move(response)), producer(std::move(body)) {}

  Response head;
  BodyProducer producer;  ///< empty: `head` is the whole response
};

/// Answers one admin request from a peer, on the admin thread. The request and the endpoint
/// live until the returned awaitable completes (a streaming reply's producer must not keep
/// references to them).
using Handler = std::function<boost::asio::awaitable<Reply>(
    const Request&, const boost::asio::ip::tcp::endpoint& peer)>;

/// The admin listener (docs/behaviour.md "Admin API"): a small HTTP/1.1 server on its own port and
/// thread, apart from the data path, so it stays up while the proxy drains. Keep-alive; request
/// heads are capped at 16 KiB and bodies at 1 MiB (413); every read and write times out after 10 s.
/// A streaming reply (Reply::producer) holds its connection until the producer returns.
/// Confined to the io_context of its acceptor; the handler and logger outlive the server.
class AdminServer : public std::enable_shared_from_this<AdminServer> {
 public:
  AdminServer(boost::asio::ip::tcp::acceptor acceptor, Handler handler,
              std::shared_ptr<spdlog::logger> log);

  void start();
  void stop();

 private:
  /// The completion handler of every coroutine spawned here: logs what escaped it.
  [[nodiscard]] std::function<void(std::exception_ptr)> log_stray_exception() const;
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);
  /// Sends `reply`'s head, runs its producer, ends the body. The connection closes after it.
  boost::asio::awaitable<void> stream(boost::beast::tcp_stream& stream, const Request& req,
                                      Reply reply);
  static boost::asio::awaitable<void> linger(boost::beast::tcp_stream& stream);

  boost::asio::ip::tcp::acceptor acceptor_;
  Handler handler_;
  std::shared_ptr<spdlog::logger> log_;
};

/// A JSON error response `{"error": reason}`.
[[nodiscard]] Response json_error(const Request& request, boost::beast::http::status status,
                                  std::string_view reason);

/// A plain-text response.
[[nodiscard]] Response text(const Request& request, boost::beast::http::status status,
                            std::string body);

}  // namespace sluice::admin
