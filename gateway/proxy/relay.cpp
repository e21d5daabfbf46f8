// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/relay.hpp"

#include <boost/asio/write.hpp>
#include <optional>

namespace sluice::proxy {
namespace {

/// need_buffer only means "the body buffer is used up": not an error for a relay.
beast::error_code relay_error(beast::error_code ec) {
  return ec == http::error::need_buffer ? beast::error_code{} : ec;
}

/// Points a buffer_body at the `n` bytes just parsed into `buf`. An empty final piece gets no
/// buffer at all, so that the serializer writes the terminator alone (never an empty chunk).
void set_chunk(http::buffer_body::value_type& body, char* buf, std::size_t n, bool more) {
  body.data = (n == 0 && !more) ? nullptr : buf;
  body.size = n;
  body.more = more;
}

/// True when the rest of the body is unknown or too large to arrive in a read or two: worth a
/// full-size read buffer (small bodies are the common case and need no allocation).
template <bool IsRequest>
bool large_body(const http::parser<IsRequest, http::buffer_body>& parser,
                const beast::flat_buffer& buffer) {
  constexpr std::uint64_t kSmallBody = std::uint64_t{16} * 1024;
  if (parser.is_done()) {
    return false;
  }
  const auto length = parser.content_length();
  return !length || *length > buffer.size() + kSmallBody;
}

/// Copies `head` into `out` as Beast serializes it (its Fields writer makes the bytes); the
/// size, or nullopt when it does not fit in `size`.
template <bool IsRequest>
std::optional<std::size_t> flatten_head(const http::header<IsRequest>& head, char* out,
                                        std::size_t size) {
  const auto writer = [&head] {
    if constexpr (IsRequest) {
      return http::fields::writer(head, head.version(), head.method());
    } else {
      return http::fields::writer(head, head.version(), head.result_int());
    }
  }();
  const auto buffers = writer.get();
  const std::size_t n = beast::buffer_bytes(buffers);
  if (n > size) {
    return std::nullopt;
  }
  net::buffer_copy(net::buffer(out, size), buffers);
  return n;
}

}  // namespace

net::awaitable<std::optional<PumpResult>> send_small_request(const http::request_header<>& head,
                                                             beast::tcp_stream& up, char* buf,
                                                             std::size_t size,
                                                             core::Duration up_timeout) {
  const auto n = flatten_head(head, buf, size);
  if (!n) {
    co_return std::nullopt;
  }
  PumpResult result;
  up.expires_after(up_timeout);
  auto [ec, written] = co_await net::async_write(up, net::buffer(buf, *n), kAsTuple);
  result.up_error = ec;
  result.complete = !ec;
  co_return result;
}

net::awaitable<std::optional<RelayResult>> send_small_response(
    ResponseParser& parser, beast::flat_buffer& up_buffer, beast::tcp_stream& down, char* buf,
    std::size_t size, core::Duration down_timeout, bool head_only) {
  auto& res = parser.get();
  const auto length = parser.content_length();
  const bool whole_body_here =
      head_only || parser.is_done() ||
      (!parser.chunked() && length && *length <= up_buffer.size() && *length <= size);
  if (!whole_body_here) {
    co_return std::nullopt;
  }
  const auto n = flatten_head(res.base(), buf, size);
  const std::uint64_t body = head_only || parser.is_done() ? 0 : *length;
  if (!n || *n + body > size) {
    co_return std::nullopt;
  }
  RelayResult result;
  if (body > 0) {  // parse the body straight into place behind the head
    res.body().data = buf + *n;
    res.body().size = static_cast<std::size_t>(body);
    beast::error_code ec;
    up_buffer.consume(parser.put(up_buffer.data(), ec));
    if (relay_error(ec) || !parser.is_done()) {
      result.up_error = ec ? ec : http::error::partial_message;
      co_return result;
    }
  }
  down.expires_after(down_timeout);
  const auto total = static_cast<std::size_t>(*n + body);
  auto [ec, written] = co_await net::async_write(down, net::buffer(buf, total), kAsTuple);
  result.down_error = ec;
  result.head_sent = !ec;
  result.complete = !ec;
  result.body_bytes = ec ? 0 : body;
  result.need_eof = res.need_eof();
  co_return result;
}

net::awaitable<PumpResult> pump_request(beast::tcp_stream& down, beast::flat_buffer& down_buffer,
                                        RequestParser& parser, beast::tcp_stream& up, char* buf,
                                        std::size_t size, core::Duration down_timeout,
                                        core::Duration up_timeout, DuplexState& duplex) {
  PumpResult result;
  auto& req = parser.get();
  http::request_serializer<http::buffer_body> serializer(req);
  if (large_body(parser, down_buffer)) {
    // Beast reads at most the buffer's free capacity at a time (512 bytes at least): give it
    // room for whole body buffers, or a large body moves in tiny reads.
    down_buffer.reserve(size);
  }
  for (;;) {
    if (!parser.is_done()) {
      req.body().data = buf;
      req.body().size = size;
      down.expires_after(down_timeout);
      auto [ec, n] = co_await http::async_read_some(down, down_buffer, parser, kAsTuple);
      if (relay_error(ec)) {
        result.down_error = ec;
        break;
      }
      set_chunk(req.body(), buf, size - req.body().size, !parser.is_done());
      if (req.body().size == 0 && req.body().more) {
        // Only framing was parsed (a chunk header, or the head alone). Never hand the serializer
        // an empty chunk: in chunked mode it would encode it as the last chunk and end the body.
        if (!serializer.is_header_done()) {
          up.expires_after(up_timeout);
          auto [hec, hn] = co_await http::async_write_header(up, serializer, kAsTuple);
          if (hec) {
            result.up_error = hec;
            break;
          }
        }
        continue;
      }
    } else {
      req.body().data = nullptr;
      req.body().size = 0;
      req.body().more = false;
    }
    const std::size_t chunk = req.body().size;
    up.expires_after(up_timeout);
    auto [ec, n] = co_await http::async_write(up, serializer, kAsTuple);
    if (relay_error(ec)) {
      result.up_error = ec;
      break;
    }
    result.body_bytes += chunk;
    if (serializer.is_done()) {
      result.complete = true;
      break;
    }
  }
  duplex.request_done = true;
  if (result.down_error && duplex.cancel_upstream_on_failure && !duplex.response_done) {
    // The client failed (gone, or past max_body_bytes): stop waiting for the upstream.
    up.cancel();
  } else if (result.complete && duplex.head_deadline != nullptr && !duplex.head_received) {
    // The request is out: from now on the upstream has timeout_ms to start answering.
    duplex.head_deadline->arm(up, duplex.head_timeout);
  }
  co_return result;
}

net::awaitable<RelayResult> relay_response(beast::tcp_stream& up, beast::flat_buffer& up_buffer,
                                           ResponseParser& parser, beast::tcp_stream& down,
                                           char* buf, std::size_t size, core::Duration up_timeout,
                                           core::Duration down_timeout, bool head_only,
                                           DuplexState& duplex) {
  RelayResult result;
  auto& res = parser.get();
  http::response_serializer<http::buffer_body> serializer(res);
  if (!head_only && large_body(parser, up_buffer)) {
    up_buffer.reserve(size);  // see pump_request
  }
  if (head_only) {
    down.expires_after(down_timeout);
    auto [ec, n] = co_await http::async_write_header(down, serializer, kAsTuple);
    result.down_error = ec;
    result.head_sent = !ec;
    result.complete = !ec;
  }
  while (!head_only) {
    if (!parser.is_done()) {
      res.body().data = buf;
      res.body().size = size;
      up.expires_after(up_timeout);
      auto [ec, n] = co_await http::async_read_some(up, up_buffer, parser, kAsTuple);
      if (relay_error(ec)) {
        result.up_error = ec;
        break;
      }
      set_chunk(res.body(), buf, size - res.body().size, !parser.is_done());
      if (res.body().size == 0 && res.body().more) {
        if (!serializer.is_header_done()) {  // see pump_request: send the head on its own
          down.expires_after(down_timeout);
          auto [hec, hn] = co_await http::async_write_header(down, serializer, kAsTuple);
          if (hec) {
            result.down_error = hec;
            break;
          }
          result.head_sent = true;
        }
        continue;
      }
    } else {
      res.body().data = nullptr;
      res.body().size = 0;
      res.body().more = false;
    }
    const std::size_t chunk = res.body().size;
    down.expires_after(down_timeout);
    auto [ec, n] = co_await http::async_write(down, serializer, kAsTuple);
    if (relay_error(ec)) {
      result.down_error = ec;
      break;
    }
    result.head_sent = true;
    result.body_bytes += chunk;
    if (serializer.is_done()) {
      result.complete = true;
      result.need_eof = res.need_eof();
      break;
    }
  }
  duplex.response_done = true;
  if (duplex.cancel_downstream_when_done && !duplex.request_done) {
    // The response is over while the client is still sending (an early answer): stop reading.
    down.cancel();
  }
  co_return result;
}

}  // namespace sluice::proxy
