// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/http_client.hpp"
#include "tests/support/timeouts.hpp"

namespace sluice::testing {

/// A synchronous HTTPS/1.1 test client over one keep-alive TLS connection to 127.0.0.1:PORT
/// (Beast over OpenSSL, its own io_context), for what the command-line clients cannot do: keep
/// one connection open across a reload, present a client certificate request after request,
/// open a thousand handshakes. Verifies the server against `ca` and `server_name` (also sent
/// as SNI). Every operation is bounded by the timeout; failures throw std::runtime_error.
///
/// Thread-safety: confined to one thread. Lifetime: owns its connection; the files named in
/// Options are read at construction.
class TlsClient {
 public:
  struct Options {
    std::string server_name;  ///< SNI and the name verified
    std::string ca;           ///< PEM file the server's certificate must chain to
    std::optional<std::string> cert = std::nullopt;  ///< client certificate (PEM)
    std::optional<std::string> key = std::nullopt;   ///< its key
  };

  /// Connects and completes the handshake; throws std::runtime_error on failure.
  TlsClient(std::uint16_t port, const Options& options,
            std::chrono::milliseconds timeout = kDefaultTimeout);
  ~TlsClient();
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  /// Sends one GET and reads its response; throws on any failure (a TLS 1.3 server refuses a
  /// client certificate only after the client's handshake, so that shows here).
  Response get(std::string_view target, const Headers& headers = {});
  /// Sends a GET of each target, each in its own TLS record, before reading any response (so
  /// the records reach the server together), then reads the responses in order.
  std::vector<Response> pipeline(const std::vector<std::string>& targets);
  /// The server certificate's subject, as OpenSSL prints it one line ("/CN=api").
  [[nodiscard]] std::string peer_subject() const;
  /// The server certificate's serial number, in hex.
  [[nodiscard]] std::string peer_serial() const;
  /// Sends close_notify and closes.
  void close();

 private:
  void send_get(std::string_view target, const Headers& headers);
  Response read_response(std::string_view target);

  boost::asio::io_context ioc_;
  boost::asio::ssl::context ctx_;
  std::unique_ptr<boost::beast::ssl_stream<boost::beast::tcp_stream>> stream_;
  boost::beast::flat_buffer buffer_;
  std::string server_name_;
  std::chrono::milliseconds timeout_;
};

/// True when a TlsClient with `options` connects and gets an answer to GET `target`.
[[nodiscard]] bool tls_get_works(std::uint16_t port, const TlsClient::Options& options,
                                 std::string_view target = "/ok");

}  // namespace sluice::testing
