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

namespace sluice::admin {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

/// Answers one admin request from a peer, on the admin thread. The request and the endpoint
/// live until the returned awaitable completes.
using Handler = std::function<boost::asio::awaitable<Response>(
    const Request&, const boost::asio::ip::tcp::endpoint& peer)>;

/// The admin listener (docs/behaviour.md "Admin API"): a small HTTP/1.1 server on its own port and
/// thread, apart from the data path, so it stays up while the proxy drains. Keep-alive; request
/// heads are capped at 16 KiB and bodies at 1 MiB (413); every read and write times out after 10 s.
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
