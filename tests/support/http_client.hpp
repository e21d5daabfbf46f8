// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/support/timeouts.hpp"

namespace sluice::testing {

namespace http = boost::beast::http;

using Headers = std::vector<std::pair<std::string, std::string>>;
using Response = http::response<http::string_body>;

/// A synchronous HTTP/1.1 test client over one keep-alive connection to 127.0.0.1:PORT, on
/// Beast with its own io_context. Every operation is bounded by a timeout (construction's,
/// 5 s by default, or the call's). request() and send_raw() throw std::runtime_error on any
/// failure (gtest reports it as a failed test); the read_* calls and closed_by_peer() report
/// through their results.
///
/// Thread-safety: confined to one thread. Lifetime: owns its connection.
class HttpClient {
 public:
  /// Connects; throws std::runtime_error if the connection fails (see probe_connect()).
  explicit HttpClient(std::uint16_t port, std::chrono::milliseconds timeout = kDefaultTimeout);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  /// The error of one connection attempt to 127.0.0.1:PORT (success: an empty error_code).
  static boost::system::error_code probe_connect(
      std::uint16_t port, std::chrono::milliseconds timeout = kDefaultTimeout);

  /// Sends one request and reads its response (skipping interim 1xx other than 101). `headers`
  /// are added as given (duplicates allowed); Host and User-Agent are set unless present, and
  /// Content-Length from the body unless Content-Length or Transfer-Encoding is given.
  /// Reconnects first if the previous response ended the connection or it was closed.
  Response request(http::verb method, std::string_view target, const Headers& headers = {},
                   std::string body = {});
  Response get(std::string_view target, const Headers& headers = {}) {
    return request(http::verb::get, target, headers);
  }

  /// Writes bytes as they are (pipelining, malformed requests...).
  void send_raw(std::string_view bytes);
  /// Reads the next response (use `head_request` for the answer to a HEAD). nullopt on
  /// timeout (which closes the connection), end of stream or a malformed response.
  std::optional<Response> read_response(std::chrono::milliseconds timeout = kDefaultTimeout,
                                        bool head_request = false);
  /// Everything that arrives until the peer closes (buffered bytes first). If the timeout hits
  /// first, returns what arrived so far and the connection is closed.
  std::string read_raw_until_close(std::chrono::milliseconds timeout = kDefaultTimeout);
  /// True if the peer closes (FIN or reset) within `timeout`. Bytes that arrive meanwhile are
  /// kept for the next read. On false the connection stays open and usable.
  bool closed_by_peer(std::chrono::milliseconds timeout = kDefaultTimeout);

  /// (Re)connects, dropping any buffered bytes. Throws std::runtime_error on failure.
  void connect();
  void close();
  [[nodiscard]] bool is_open() const { return stream_.socket().is_open(); }
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  /// The client side's port (to tell connections apart in the peer's logs).
  [[nodiscard]] std::uint16_t local_port() const;
  [[nodiscard]] boost::beast::tcp_stream& stream() noexcept { return stream_; }

 private:
  std::uint16_t port_;
  std::chrono::milliseconds timeout_;
  boost::asio::io_context ioc_;
  boost::beast::tcp_stream stream_{ioc_};
  boost::beast::flat_buffer buffer_;  // may hold bytes of the next response
  bool must_reconnect_ = false;       // the last response said the connection ends
  // A read saw the end of the stream (or a reset). Asio's epoll reactor would never complete
  // another read on such a socket (no new readiness edge comes), so reads are answered from
  // buffer_ alone until connect().
  bool peer_closed_ = false;

  void note_read_error(const boost::system::error_code& ec);
  std::optional<Response> parse_buffered(bool head_request);
};

/// What a streamed transfer saw. Bodies are checked against demo::pattern_byte (the bytes of
/// the demo backend's /bytes/N and of stream_upload's request bodies) and never stored.
struct StreamResult {
  unsigned status = 0;               // 0 if no response header arrived
  http::response_header<> header;    // the response header
  std::uint64_t bytes_sent = 0;      // request body bytes written
  std::uint64_t body_bytes = 0;      // response body bytes received
  bool pattern_ok = true;            // every received body byte matched the pattern
  std::uint64_t first_mismatch = 0;  // offset of the first byte that did not (if !pattern_ok)
  std::string body_prefix;           // the first 4 KiB of the response body (JSON replies)
  bool complete = false;             // the whole response arrived
  std::string error;                 // the first I/O error, "" if none
};

/// POSTs `bytes` pattern bytes to `target` on 127.0.0.1:PORT, chunked or with Content-Length,
/// while reading the response at the same time (echoes never deadlock), in 64 KiB pieces:
/// memory stays flat. `idle_timeout` bounds each read and write, not the whole transfer.
StreamResult stream_upload(std::uint16_t port, std::string_view target, std::uint64_t bytes,
                           bool chunked, const Headers& headers = {},
                           std::chrono::milliseconds idle_timeout = kDefaultTimeout);

/// GETs `target` and reads the response body in 64 KiB pieces without storing it.
StreamResult stream_download(std::uint16_t port, std::string_view target,
                             const Headers& headers = {},
                             std::chrono::milliseconds idle_timeout = kDefaultTimeout);

}  // namespace sluice::testing
