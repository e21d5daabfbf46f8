// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/beast/http/error.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gateway/core/clock.hpp"
#include "gateway/http1/gather_list.hpp"
#include "gateway/http1/message_parser.hpp"
#include "gateway/proxy/io/deadline.hpp"
#include "gateway/proxy/io/net.hpp"
#include "gateway/proxy/io/stream_ops.hpp"

namespace sluice::proxy {

/// The end a body is read from: its stream, its read buffer (which may already hold body bytes)
/// and the deadline of each read, `timeout` from the read's start.
template <typename Stream>
struct ReadEnd {
  Stream& stream;
  beast::flat_buffer& buffer;
  Deadline& deadline;
  core::Duration timeout;
};

/// The end a body is written to, each write within `timeout`.
template <typename Stream>
struct WriteEnd {
  Stream& stream;
  Deadline& deadline;
  core::Duration timeout;
};

struct RelayResult {
  std::uint64_t body_bytes = 0;
  /// Reading the source failed (beast::error::timeout when its deadline expired; a parse error
  /// such as http::error::body_limit or a bad chunk; net::error::eof when it closed early).
  boost::system::error_code read_error;
  boost::system::error_code write_error;  ///< writing the sink failed (timeout likewise)
  bool wrote = false;     ///< something (the pending head, at least) reached the sink
  bool complete = false;  ///< the whole message was written
};

/// How many pieces one gather write carries at most before the relay writes them out.
inline constexpr std::size_t kMaxPiecesPerWrite = 32;
/// How much one read asks for while a body streams (the buffer grows to it once, then stays).
inline constexpr std::size_t kRelayReadSize = std::size_t{64} * 1024;

/// How much the relay's next read from `stream` asks for, at most `most`: a socket's reads ask
/// for `most`. A stream type whose bytes wait in memory already overloads this in its own
/// namespace (found by argument-dependent lookup), so a small message needs no larger buffer.
template <typename Stream>
std::size_t relay_read_size(const Stream& /*stream*/, const beast::flat_buffer& /*buffer*/,
                            std::size_t most) noexcept {
  return most;
}

/// Appends one body piece to `out`, as a chunk when `chunked`.
inline void add_piece(http1::GatherList& out, std::string_view piece, bool chunked) {
  if (chunked) {
    out.add_hex(piece.size());
    out.add_copy("\r\n");
    out.add(piece);
    out.add_copy("\r\n");
  } else {
    out.add(piece);
  }
}

/// Parses the body bytes already in `buffer` from `parsed` on into `out` (as chunks when
/// `chunked`), up to kMaxPiecesPerWrite pieces; adds the last-chunk (with a response's trailer
/// fields) when the message ends during this call. Returns the new `parsed`; `ec` is a parse error.
/// Views point into `buffer`.
template <bool IsRequest>
std::size_t gather_body(http1::MessageParser<IsRequest>& parser, const beast::flat_buffer& buffer,
                        std::size_t parsed, http1::GatherList& out, bool chunked,
                        std::uint64_t& body_bytes, boost::system::error_code& ec) {
  const std::string_view data(static_cast<const char*>(buffer.data().data()), buffer.size());
  const bool was_done = parser.is_done();
  std::size_t pieces = 0;
  while (!parser.is_done() && parsed < data.size() && pieces < kMaxPiecesPerWrite) {
    const std::size_t n = parser.put(data.substr(parsed), ec);
    if (ec == boost::beast::http::error::need_more) {
      ec = {};
      break;  // a chunk header or trailer is still arriving
    }
    if (ec) {
      return parsed;
    }
    parsed += n;
    if (const std::string_view piece = parser.piece(); !piece.empty()) {
      add_piece(out, piece, chunked);
      body_bytes += piece.size();
      ++pieces;
    }
    if (n == 0) {
      break;
    }
  }
  if (!was_done && parser.is_done() && chunked) {
    // The last chunk, with a response's forwardable trailer fields (views into `buffer`, like
    // the pieces): gRPC's status and the like reach the client, HTTP/2 ones as trailers.
    out.add_copy("0\r\n");
    const http1::FieldList& trailers = parser.trailers();
    for (std::size_t i = 0; i < trailers.size(); ++i) {
      const http1::FieldRef& f = trailers[i];
      out.add(f.name);
      out.add_copy(": ");
      out.add(f.value);
      out.add_copy("\r\n");
    }
    out.add_copy("\r\n");
  }
  return parsed;
}

/// A body delimited by closing whose source closed: the parse completes, and a body re-framed
/// as chunks gets its last chunk in `pending`. Returns the parser's error when that was no end.
template <bool IsRequest>
boost::system::error_code end_at_close(http1::MessageParser<IsRequest>& parser,
                                       http1::GatherList& pending, bool chunked) {
  boost::system::error_code ec;
  parser.put_eof(ec);
  if (!ec && chunked) {
    pending.add_copy("0\r\n\r\n");
  }
  return ec;
}

/// Streams the rest of a message whose head was parsed: body pieces go from `from` to `to`
/// through views of the read buffer (no copy), re-framed as chunks when `chunked` (the source's
/// own chunking, or a body delimited by closing, toward an HTTP/1.1 peer) or as they are.
/// `pending` holds what must be written first (the message's head, composed by the caller from
/// views of the same buffer), and the first `parsed` bytes of `from.buffer` (the head) are
/// consumed once it is written, so a head and a small body leave in one write. Memory stays flat:
/// one read buffer of at most kRelayReadSize and a bounded gather list. One template for both
/// directions (request: client to upstream; response: upstream to client). Operations take
/// their memory from `ops`. Never throws.
template <bool IsRequest, typename From, typename To>
Task<RelayResult> relay_body(http1::MessageParser<IsRequest>& parser, std::size_t parsed,
                             ReadEnd<From> from, WriteEnd<To> to, http1::GatherList& pending,
                             bool chunked, const core::Clock& clock,
                             std::pmr::memory_resource* ops) {
  RelayResult r;
  std::uint64_t gathered = 0;  // body bytes in `pending`: counted once written
  for (;;) {
    boost::system::error_code ec;
    parsed = gather_body(parser, from.buffer, parsed, pending, chunked, gathered, ec);
    if (ec) {
      r.read_error = ec;
      break;
    }
    const bool writing = !pending.empty();
    if (writing) {
      const WriteStart w = write_now(to.stream, pending.buffers());
      boost::system::error_code wec = w.ec;
      if (!w.done) {
        to.deadline.arm(clock.now() + to.timeout);
        wec = co_await write_rest(to.stream, pending.buffers(), w.written, ops);
        to.deadline.disarm();
      }
      if (wec) {
        r.write_error = to.deadline.expired() ? beast::error::timeout : wec;
        break;
      }
      r.wrote = true;
      r.body_bytes += gathered;
      gathered = 0;
      pending.clear();
    }
    from.buffer.consume(parsed);
    parsed = 0;
    if (parser.is_done()) {
      r.complete = true;
      break;
    }
    if (writing && from.buffer.size() > 0) {
      // The gather may have stopped at kMaxPiecesPerWrite with whole chunks (even the end) read
      // already: parse them before reading again, as the source may have nothing more to send
      // (an HTTP/2 stream's next read is eof, a kept-alive upstream's never completes).
      continue;
    }
    from.deadline.arm(clock.now() + from.timeout);
    auto [rec, n] = co_await from.stream.async_read_some(
        from.buffer.prepare(relay_read_size(from.stream, from.buffer, kRelayReadSize)), kAsTuple);
    from.deadline.disarm();
    if (from.deadline.expired()) {
      r.read_error = beast::error::timeout;
      break;
    }
    if (rec == net::error::eof && parser.need_eof()) {
      if ((r.read_error = end_at_close(parser, pending, chunked))) {
        break;
      }
      continue;  // write the last chunk, if any, and finish
    }
    if (rec) {
      r.read_error = rec;
      break;
    }
    from.buffer.commit(n);
  }
  if (!r.complete && parsed > 0) {
    from.buffer.consume(parsed);
  }
  co_return r;
}

}  // namespace sluice::proxy
