// SPDX-License-Identifier: Apache-2.0
// stream_upload / stream_download (declared in http_client.hpp): one request and its response,
// bodies in 64 KiB pieces through buffer_body, written and read concurrently on one io_context.
#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>
#include <cstring>
#include <vector>

#include "gateway/demo/byte_pattern.hpp"
#include "tests/support/as_tuple.hpp"
#include "tests/support/http_client.hpp"

namespace sluice::testing {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
using demo::kPatternAlphabet;
using demo::kPieceBytes;

constexpr std::size_t kPrefixBytes = 4096;

/// The pattern from offset 0, one piece plus one period long: the expected bytes at any offset
/// are a window of it. Never written after initialisation (non-const for buffer_body's void*).
std::vector<char>& pattern_buffer() {
  static std::vector<char> buffer = [] {
    std::vector<char> b(kPieceBytes + kPatternAlphabet.size());
    for (std::size_t i = 0; i < b.size(); ++i) {
      b[i] = demo::pattern_byte(i);
    }
    return b;
  }();
  return buffer;
}

/// Accounts for `n` (<= kPieceBytes) received body bytes.
void take_body(StreamResult& result, const char* data, std::size_t n) {
  if (result.body_prefix.size() < kPrefixBytes) {
    result.body_prefix.append(data, std::min(n, kPrefixBytes - result.body_prefix.size()));
  }
  if (result.pattern_ok) {
    const char* expected = pattern_buffer().data() + result.body_bytes % kPatternAlphabet.size();
    if (std::memcmp(data, expected, n) != 0) {
      result.pattern_ok = false;
      result.first_mismatch =
          result.body_bytes +
          static_cast<std::uint64_t>(std::mismatch(data, data + n, expected).first - data);
    }
  }
  result.body_bytes += n;
}

void note(StreamResult& result, std::string_view what, const beast::error_code& ec) {
  if (result.error.empty()) {
    result.error = std::string(what) + ": " + ec.message();
  }
}

template <typename Request>
void set_headers(Request& req, std::uint16_t port, const Headers& headers) {
  req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  req.set(http::field::user_agent, "sluice-test");
  for (const auto& [name, value] : headers) {
    req.set(name, value);
  }
}

net::awaitable<void> read_response(beast::tcp_stream& stream, StreamResult& result,
                                   std::chrono::milliseconds idle) {
  beast::flat_buffer buffer;
  buffer.reserve(kPieceBytes);  // a flat_buffer reads at most its capacity per recv
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  stream.expires_after(idle);
  if (auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, kAsTuple); ec) {
    note(result, "read header", ec);
    co_return;
  }
  result.status = parser.get().result_int();
  result.header = parser.get().base();
  std::vector<char> piece(kPieceBytes);
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    stream.expires_after(idle);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, kAsTuple);
    if (ec && ec != http::error::need_buffer) {
      note(result, "read body", ec);
      co_return;
    }
    take_body(result, piece.data(), piece.size() - parser.get().body().size);
  }
  result.complete = true;
}

/// Writes the request header and `bytes` pattern bytes; `done` is set at the end.
net::awaitable<void> write_upload(beast::tcp_stream& stream, http::request<http::buffer_body>& req,
                                  std::uint64_t bytes, StreamResult& result, bool& done,
                                  std::chrono::milliseconds idle) {
  http::request_serializer<http::buffer_body> serializer{req};
  req.body().data = nullptr;
  req.body().more = true;
  stream.expires_after(idle);
  auto [hec, hn] = co_await http::async_write_header(stream, serializer, kAsTuple);
  std::uint64_t remaining = bytes;
  while (!hec) {
    const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(remaining, kPieceBytes));
    remaining -= piece;
    req.body().data = piece == 0 ? nullptr : pattern_buffer().data();  // pieces start at k*64 KiB
    req.body().size = piece;
    req.body().more = remaining > 0;
    stream.expires_after(idle);
    auto [ec, n] = co_await http::async_write(stream, serializer, kAsTuple);
    if (ec && ec != http::error::need_buffer) {
      hec = ec;
      break;
    }
    result.bytes_sent += piece;
    if (remaining == 0) {
      break;
    }
  }
  if (hec && !result.complete) {  // after a complete (early) response, write errors are moot
    note(result, "write", hec);
  }
  done = true;
}

/// Connects, then runs `body(stream)` on a fresh io_context until everything finishes.
template <typename Body>
StreamResult run_transfer(std::uint16_t port, std::chrono::milliseconds idle, Body body) {
  StreamResult result;
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        stream.expires_after(idle);
        const net::ip::tcp::endpoint endpoint{net::ip::address_v4::loopback(), port};
        if (auto [ec] = co_await stream.async_connect(endpoint, kAsTuple); ec) {
          note(result, "connect", ec);
          co_return;
        }
        co_await body(stream, result);
      },
      net::detached);
  ioc.run();
  return result;
}

}  // namespace

StreamResult stream_upload(std::uint16_t port, std::string_view target, std::uint64_t bytes,
                           bool chunked, const Headers& headers,
                           std::chrono::milliseconds idle_timeout) {
  http::request<http::buffer_body> req{http::verb::post, target, 11};
  req.set(http::field::content_type, "application/octet-stream");
  set_headers(req, port, headers);
  if (chunked) {
    req.chunked(true);
  } else {
    req.content_length(bytes);
  }
  bool written = false;
  return run_transfer(port, idle_timeout,
                      [&](beast::tcp_stream& stream, StreamResult& result) -> net::awaitable<void> {
                        net::co_spawn(
                            stream.get_executor(),
                            write_upload(stream, req, bytes, result, written, idle_timeout),
                            net::detached);
                        co_await read_response(stream, result, idle_timeout);
                        if (!written) {  // answered early (e.g. 413): stop writing
                          stream.close();
                        }
                      });
}

StreamResult stream_download(std::uint16_t port, std::string_view target, const Headers& headers,
                             std::chrono::milliseconds idle_timeout) {
  http::request<http::empty_body> req{http::verb::get, target, 11};
  set_headers(req, port, headers);
  return run_transfer(port, idle_timeout,
                      [&](beast::tcp_stream& stream, StreamResult& result) -> net::awaitable<void> {
                        stream.expires_after(idle_timeout);
                        if (auto [ec, n] = co_await http::async_write(stream, req, kAsTuple); ec) {
                          note(result, "write", ec);
                          co_return;
                        }
                        co_await read_response(stream, result, idle_timeout);
                      });
}

}  // namespace sluice::testing
