// SPDX-License-Identifier: Apache-2.0
#include "tests/support/http_client.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <stdexcept>

namespace sluice::testing {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;

constexpr std::size_t kReadBytes = std::size_t{64} * 1024;  // per recv (flat_buffer capacity)

struct IoResult {
  beast::error_code ec;
  std::size_t bytes = 0;
};

/// Starts one asynchronous operation through `initiate(handler)` and runs the io_context until
/// it (and the stream's timer) completes: synchronous I/O that honours tcp_stream timeouts.
template <typename Initiate>
IoResult run_io(net::io_context& ioc, Initiate&& initiate) {
  IoResult result;
  result.ec = net::error::operation_aborted;  // replaced by the handler
  std::forward<Initiate>(initiate)([&result](beast::error_code ec, std::size_t n) {
    result.ec = ec;
    result.bytes = n;
  });
  ioc.restart();
  ioc.run();
  return result;
}

net::ip::tcp::endpoint loopback(std::uint16_t port) {
  return {net::ip::address_v4::loopback(), port};
}

std::runtime_error failure(const std::string& what, std::uint16_t port,
                           const beast::error_code& ec) {
  return std::runtime_error("HttpClient 127.0.0.1:" + std::to_string(port) + ": " + what + ": " +
                            ec.message());
}

beast::error_code connect_stream(net::io_context& ioc, beast::tcp_stream& stream,
                                 std::uint16_t port, std::chrono::milliseconds timeout) {
  stream.expires_after(timeout);
  return run_io(ioc,
                [&](auto handler) {
                  stream.async_connect(loopback(port),
                                       [handler](beast::error_code ec) mutable { handler(ec, 0); });
                })
      .ec;
}

/// Reads one response into `parser`, bounded by `timeout`.
IoResult read_message(net::io_context& ioc, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                      http::response_parser<http::string_body>& parser,
                      std::chrono::milliseconds timeout) {
  parser.body_limit(boost::none);
  stream.expires_after(timeout);
  return run_io(ioc, [&](auto handler) { http::async_read(stream, buffer, parser, handler); });
}

}  // namespace

HttpClient::HttpClient(std::uint16_t port, std::chrono::milliseconds timeout)
    : port_(port), timeout_(timeout) {
  buffer_.reserve(kReadBytes);  // a flat_buffer reads at most its capacity per recv
  connect();
}

HttpClient::~HttpClient() {
  close();
}

beast::error_code HttpClient::probe_connect(std::uint16_t port, std::chrono::milliseconds timeout) {
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  return connect_stream(ioc, stream, port, timeout);
}

void HttpClient::connect() {
  close();
  buffer_.consume(buffer_.size());
  must_reconnect_ = false;
  peer_closed_ = false;
  if (const auto ec = connect_stream(ioc_, stream_, port_, timeout_)) {
    throw failure("connect", port_, ec);
  }
  beast::error_code ignored;
  stream_.socket().set_option(net::ip::tcp::no_delay(true), ignored);
}

void HttpClient::close() {
  beast::error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  stream_.close();
}

std::uint16_t HttpClient::local_port() const {
  beast::error_code ec;
  return stream_.socket().local_endpoint(ec).port();
}

Response HttpClient::request(http::verb method, std::string_view target, const Headers& headers,
                             std::string body) {
  if (must_reconnect_ || peer_closed_ || !is_open()) {
    connect();
  }
  http::request<http::string_body> req{method, target, 11};
  bool has_host = false;
  bool has_agent = false;
  bool has_framing = false;
  for (const auto& [name, value] : headers) {
    req.insert(name, value);
    has_host = has_host || beast::iequals(name, "host");
    has_agent = has_agent || beast::iequals(name, "user-agent");
    has_framing = has_framing || beast::iequals(name, "content-length") ||
                  beast::iequals(name, "transfer-encoding");
  }
  if (!has_host) {
    req.set(http::field::host, "127.0.0.1:" + std::to_string(port_));
  }
  if (!has_agent) {
    req.set(http::field::user_agent, "sluice-test");
  }
  req.body() = std::move(body);
  if (!has_framing) {
    req.prepare_payload();
  }
  const std::string what = std::string(http::to_string(method)) + " " + std::string(target);
  stream_.expires_after(timeout_);
  const auto written =
      run_io(ioc_, [&](auto handler) { http::async_write(stream_, req, handler); });
  if (written.ec) {
    throw failure(what + ": write", port_, written.ec);
  }
  for (;;) {
    http::response_parser<http::string_body> parser;
    parser.skip(method == http::verb::head);
    const auto read = read_message(ioc_, stream_, buffer_, parser, timeout_);
    note_read_error(read.ec);
    if (read.ec) {
      throw failure(what + ": read", port_, read.ec);
    }
    auto res = parser.release();
    if (res.result_int() >= 100 && res.result_int() < 200 &&
        res.result() != http::status::switching_protocols) {
      continue;  // interim (100 Continue, 103 Early Hints): the real answer follows
    }
    must_reconnect_ = !res.keep_alive() || res.result() == http::status::switching_protocols;
    return res;
  }
}

void HttpClient::send_raw(std::string_view bytes) {
  if (!is_open()) {
    connect();
  }
  stream_.expires_after(timeout_);
  const auto written =
      run_io(ioc_, [&](auto handler) { net::async_write(stream_, net::buffer(bytes), handler); });
  if (written.ec) {
    throw failure("send_raw", port_, written.ec);
  }
}

std::optional<Response> HttpClient::read_response(std::chrono::milliseconds timeout,
                                                  bool head_request) {
  if (peer_closed_) {
    return parse_buffered(head_request);
  }
  http::response_parser<http::string_body> parser;
  parser.skip(head_request);
  const auto read = read_message(ioc_, stream_, buffer_, parser, timeout);
  note_read_error(read.ec);
  if (read.ec) {
    return std::nullopt;
  }
  return parser.release();
}

std::optional<Response> HttpClient::parse_buffered(bool head_request) {
  http::response_parser<http::string_body> parser;
  parser.skip(head_request);
  parser.eager(true);
  parser.body_limit(boost::none);
  beast::error_code ec;
  while (buffer_.size() > 0 && !parser.is_done()) {
    const auto used = parser.put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec || used == 0) {
      break;
    }
  }
  if (!parser.is_done() && (!ec || ec == http::error::need_more)) {
    ec = {};
    parser.put_eof(ec);  // completes a response delimited by the end of the stream
  }
  if (ec || !parser.is_done()) {
    return std::nullopt;
  }
  return parser.release();
}

void HttpClient::note_read_error(const beast::error_code& ec) {
  if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
      ec == net::error::eof || ec == net::error::connection_reset) {
    peer_closed_ = true;
  }
}

std::string HttpClient::read_raw_until_close(std::chrono::milliseconds timeout) {
  std::string data = beast::buffers_to_string(buffer_.data());
  buffer_.consume(buffer_.size());
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (is_open() && !peer_closed_) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) {
      close();
      break;
    }
    stream_.expires_after(left);
    const auto read = run_io(
        ioc_, [&](auto handler) { stream_.async_read_some(buffer_.prepare(kReadBytes), handler); });
    buffer_.commit(read.bytes);
    data += beast::buffers_to_string(buffer_.data());
    buffer_.consume(buffer_.size());
    note_read_error(read.ec);
    if (read.ec) {
      break;  // end of stream, reset, or timeout (which closed the stream)
    }
  }
  return data;
}

bool HttpClient::closed_by_peer(std::chrono::milliseconds timeout) {
  if (peer_closed_) {
    return true;
  }
  if (!is_open()) {
    return false;  // closed on our side, not the peer's
  }
  // A timer that cancels the read instead of tcp_stream's timeout, which would close the
  // connection: after `false` it stays usable.
  net::steady_timer timer(ioc_);
  timer.expires_after(timeout);
  bool timed_out = false;
  timer.async_wait([&](beast::error_code ec) {
    if (!ec) {
      timed_out = true;
      beast::error_code ignored;
      stream_.socket().cancel(ignored);
    }
  });
  ioc_.restart();
  for (;;) {
    if (timed_out) {
      return false;  // (data arrived just as the timer fired)
    }
    stream_.expires_never();
    bool done = false;
    IoResult read;
    stream_.async_read_some(buffer_.prepare(kReadBytes), [&](beast::error_code ec, std::size_t n) {
      read = {ec, n};
      done = true;
    });
    while (!done) {
      ioc_.run_one();  // the read, or the timer that cancels it
    }
    buffer_.commit(read.bytes);
    if (read.ec == net::error::operation_aborted) {
      return false;  // the timer fired: the peer kept the connection open
    }
    if (read.ec) {
      timer.cancel();
      ioc_.run();           // collect the cancelled timer
      peer_closed_ = true;  // end of stream, reset, or another error: either way, gone
      return true;
    }
  }
}

}  // namespace sluice::testing
