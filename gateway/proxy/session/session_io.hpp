// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <optional>

#include "gateway/http1/message_parser.hpp"
#include "gateway/proxy/exchange/exchange_state.hpp"
#include "gateway/proxy/io/deadline.hpp"
#include "gateway/proxy/io/net.hpp"
#include "gateway/proxy/io/stream_ops.hpp"
#include "gateway/proxy/request/errors.hpp"
#include "gateway/proxy/session/request_intake.hpp"

// The client connection's reads that are not a request's body: a head that did not arrive in
// one read, and the lingering close. Templates over the stream (docs/architecture.md,
// "Streams"); run on the worker's thread.
namespace sluice::proxy::detail {

constexpr std::size_t kFirstRead = 1024;        // a typical request head fits
constexpr std::size_t kHeadRead = 4096;         // more of a head that did not
constexpr std::size_t kIdleBufferLimit = 4096;  // larger read buffers are freed between requests
constexpr core::Duration kLingerTime = std::chrono::seconds(2);  // lingering close: how long
constexpr std::size_t kLingerBytes = std::size_t{1} << 20;       // ... and how much

template <typename Stream>
void cancel_stream(void* stream) noexcept {
  StreamOps<Stream>::cancel(*static_cast<Stream*>(stream));
}
template <typename Stream>
void close_stream(void* stream) noexcept {
  StreamOps<Stream>::close(*static_cast<Stream*>(stream));
}

/// Reads until `buffer` holds a whole request head, within the armed deadline. Returns its end,
/// 0 with `ec` set when it failed (beast::error::timeout, or header_limit past `max_bytes`).
template <typename Stream>
Task<std::size_t> read_head(Stream& stream, beast::flat_buffer& buffer, Deadline& deadline,
                            std::uint64_t max_bytes, std::pmr::memory_resource* ops,
                            boost::system::error_code& ec) {
  std::size_t scanned = 0;
  for (;;) {
    if (const std::size_t end = http1::find_head_end(buffered(buffer), scanned); end != 0) {
      co_return end;
    }
    if (buffer.size() >= max_bytes) {
      ec = boost::beast::http::error::header_limit;
      co_return 0;
    }
    auto [rec, n] = co_await stream.async_read_some(buffer.prepare(kHeadRead), pooled(ops));
    if (deadline.expired()) {
      ec = beast::error::timeout;
      co_return 0;
    }
    if (rec) {
      ec = rec;
      co_return 0;
    }
    buffer.commit(n);
  }
}

/// Waits for the rest of a request head (it did not arrive in one read). Returns its end, or 0
/// with the answer in `refused` (408 past header_timeout_ms from `since`, 431 past
/// max_header_bytes), or 0 alone when the client went away. `since`: when the connection was
/// accepted for its first request, else when the request's first bytes arrived.
template <typename Stream>
Task<std::size_t> wait_for_head(RequestContext& ctx, Downstream<Stream> down, const SessionEnv& env,
                                core::TimePoint since, std::optional<GatewayError>& refused) {
  const config::HttpConfig& http = ctx.snapshot->config().http;
  boost::system::error_code ec;
  down.read_deadline.arm(since + http.header_timeout);
  const std::size_t end = co_await read_head(down.stream, down.buffer, down.read_deadline,
                                             http.max_header_bytes, env.ops, ec);
  down.read_deadline.disarm();
  if (end == 0 && (ec == beast::error::timeout || ec == boost::beast::http::error::header_limit)) {
    ctx.request_id.generate();
    refused =
        ec == beast::error::timeout ? GatewayError::kHeaderTimeout : GatewayError::kHeaderTooLarge;
  }
  co_return end;
}

/// One empty line before a request-line is ignored (RFC 9112 §2.2; some clients send a CRLF
/// after a body): how many bytes of `head` (as find_head_end() delimited it) that is, 2 or 0.
/// A second empty line stays and is refused as the head.
inline std::size_t ignored_empty_line(std::string_view head) noexcept {
  return head.size() > 2 && head.starts_with("\r\n") ? 2 : 0;
}

/// Consumes the ignored empty line (ignored_empty_line()) of the head that ends at `end` in
/// `buffer`. Returns the head's end, moved accordingly.
inline std::size_t skip_empty_line(beast::flat_buffer& buffer, std::size_t end) {
  const std::size_t skip = ignored_empty_line(buffered(buffer).substr(0, end));
  buffer.consume(skip);
  return end - skip;
}

/// Half-closes, then reads and drops what the client still sends for a short while before
/// closing: closing with unread data would send a reset that can destroy our last response
/// before the client reads it (nginx's lingering close).
template <typename Stream>
Task<void> close_gracefully(Stream& stream, beast::flat_buffer& buffer, Deadline& deadline,
                            const core::Clock& clock, bool linger) {
  if constexpr (requires { requires StreamOps<Stream>::kSendsCloseNotify; }) {
    // TLS: close_notify (the client can tell the end from a cut); when the client may still
    // be sending, wait (as long as a linger) for its close_notify or close, else close now.
    (void)buffer;
    if (linger && StreamOps<Stream>::is_open(stream)) {
      deadline.arm(clock.now() + kLingerTime);
      co_await stream.async_shutdown(kAsTuple);
      deadline.disarm();
    } else if (StreamOps<Stream>::is_open(stream)) {
      stream.send_close_notify();
    }
  } else {
    StreamOps<Stream>::shutdown_send(stream);
    if (linger && StreamOps<Stream>::is_open(stream)) {
      deadline.arm(clock.now() + kLingerTime);
      for (std::size_t total = 0; total < kLingerBytes;) {
        buffer.consume(buffer.size());
        auto [ec, n] = co_await stream.async_read_some(buffer.prepare(kHeadRead), kAsTuple);
        if (ec) {
          break;
        }
        total += n;
      }
      deadline.disarm();
    }
  }
  StreamOps<Stream>::close(stream);
}

}  // namespace sluice::proxy::detail
