// SPDX-License-Identifier: Apache-2.0
// The streaming routes of Session: /echo, /bytes/{n} and body draining (/count and every route
// that ignores the body). Memory stays flat for any body size: one 64 KiB buffer per session,
// filled and written piece by piece (the relay pattern of Beast's http_examples.hpp).
#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include "gateway/demo/demo_session.hpp"

namespace sluice::demo {
namespace {

constexpr auto kStreamAsTuple = net::as_tuple(net::use_awaitable);

/// One piece of the pattern. Never written after initialisation, so every thread may read it;
/// non-const only because buffer_body takes a `void*`.
char* pattern_piece() {
  static std::array<char, kPieceBytes> piece = [] {
    std::array<char, kPieceBytes> p{};
    for (std::size_t i = 0; i < p.size(); ++i) {
      p[i] = pattern_byte(i);
    }
    return p;
  }();
  return piece.data();
}

/// need_buffer only says the body buffer is full (reads) or empty (writes): not an error.
bool failed(const beast::error_code& ec) {
  return ec && ec != http::error::need_buffer;
}

/// While a body streams, lets each socket read take up to a piece: a flat_buffer reads only
/// as much as its capacity (at least 512 bytes), and a small one would mean a recv per 512
/// bytes. The capacity is given back afterwards so idle keep-alive connections stay small.
class WideBuffer {
 public:
  WideBuffer(beast::flat_buffer& buffer, const RequestParser& parser)
      : buffer_(needs_reads(buffer, parser) ? &buffer : nullptr) {
    if (buffer_ != nullptr) {
      buffer_->reserve(kPieceBytes);
    }
  }
  ~WideBuffer() {
    if (buffer_ != nullptr) {
      buffer_->shrink_to_fit();  // keeps any pipelined bytes
    }
  }
  WideBuffer(const WideBuffer&) = delete;
  WideBuffer& operator=(const WideBuffer&) = delete;

 private:
  /// False when the whole body is already buffered (small keep-alive requests).
  static bool needs_reads(const beast::flat_buffer& buffer, const RequestParser& parser) {
    const auto remaining = parser.content_length_remaining();
    return !parser.is_done() && (!remaining || *remaining > buffer.size());
  }

  beast::flat_buffer* buffer_;
};

}  // namespace

net::awaitable<std::optional<std::uint64_t>> Session::drain_body(RequestParser& parser) {
  std::uint64_t total = 0;
  auto& body = parser.get().body();
  const WideBuffer wide(buffer_, parser);
  while (!parser.is_done()) {
    body.data = scratch();
    body.size = kPieceBytes;
    stream_.expires_after(kIdleTimeout);
    auto [ec, n] = co_await http::async_read(stream_, buffer_, parser, kStreamAsTuple);
    if (failed(ec)) {
      co_return std::nullopt;
    }
    total += kPieceBytes - body.size;
  }
  co_return total;
}

net::awaitable<bool> Session::echo(RequestParser& parser) {
  auto& req = parser.get();
  http::response<http::buffer_body> res{http::status::ok, req.version()};
  res.set(http::field::content_type, echo_content_type(req));
  res.set("X-Backend-Port", context_.port_text);
  if (const auto length = parser.content_length()) {
    res.content_length(*length);
  } else if (parser.is_done()) {
    res.content_length(0);
  } else {
    res.chunked(true);  // a chunked request: we learn the size only at its end
  }
  const bool keep_alive = req.keep_alive();
  res.keep_alive(keep_alive);
  res.body().data = nullptr;
  res.body().more = true;
  http::response_serializer<http::buffer_body> serializer{res};
  stream_.expires_after(kIdleTimeout);
  if (auto [ec, n] = co_await http::async_write_header(stream_, serializer, kStreamAsTuple); ec) {
    co_return false;
  }
  char* const buffer = scratch();
  const WideBuffer wide(buffer_, parser);
  for (;;) {
    std::size_t got = 0;
    if (!parser.is_done()) {
      req.body().data = buffer;
      req.body().size = kPieceBytes;
      stream_.expires_after(kIdleTimeout);
      // read_some, not read: echo what has arrived instead of waiting for a full piece.
      auto [ec, n] = co_await http::async_read_some(stream_, buffer_, parser, kStreamAsTuple);
      if (failed(ec)) {
        co_return false;
      }
      got = kPieceBytes - req.body().size;
    }
    const bool last = parser.is_done();
    if (got == 0 && !last) {
      continue;  // only framing (a chunk header) arrived
    }
    res.body().data = got == 0 ? nullptr : buffer;
    res.body().size = got;
    res.body().more = !last;
    stream_.expires_after(kIdleTimeout);
    if (auto [ec, n] = co_await http::async_write(stream_, serializer, kStreamAsTuple);
        failed(ec)) {
      co_return false;
    }
    if (last) {
      co_return keep_alive;
    }
  }
}

net::awaitable<bool> Session::send_bytes(const Request& req, std::uint64_t count) {
  http::response<http::buffer_body> res{http::status::ok, req.version()};
  res.set(http::field::content_type, "application/octet-stream");
  res.set("X-Backend-Port", context_.port_text);
  res.content_length(count);
  const bool keep_alive = req.keep_alive();
  res.keep_alive(keep_alive);
  res.body().data = nullptr;
  res.body().more = count > 0;
  http::response_serializer<http::buffer_body> serializer{res};
  stream_.expires_after(kIdleTimeout);
  if (auto [ec, n] = co_await http::async_write_header(stream_, serializer, kStreamAsTuple); ec) {
    co_return false;
  }
  if (req.method() == http::verb::head) {
    co_return keep_alive;
  }
  std::uint64_t remaining = count;
  while (remaining > 0) {
    const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(remaining, kPieceBytes));
    remaining -= piece;
    res.body().data = pattern_piece();  // pieces start at multiples of 64 KiB: same bytes
    res.body().size = piece;
    res.body().more = remaining > 0;
    stream_.expires_after(kIdleTimeout);
    if (auto [ec, n] = co_await http::async_write(stream_, serializer, kStreamAsTuple);
        failed(ec)) {
      co_return false;
    }
  }
  co_return keep_alive;
}

}  // namespace sluice::demo
