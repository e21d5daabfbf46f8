// SPDX-License-Identifier: Apache-2.0
#pragma once

// The forward step, part 2 of 6: the response head read, composed for the client and sent,
// with its body relayed. Read exchange.hpp first.

#include <cstdint>
#include <optional>

#include "gateway/http1/head_rewrite.hpp"
#include "gateway/proxy/exchange/exchange_state.hpp"

namespace sluice::proxy {
namespace detail {

/// Starts reading a response head: the parser for it, in `ctx.response`.
template <typename Down, typename Up>
void new_response(Exchange<Down, Up>& x) {
  http1::ResponseParser& rp = x.ctx.response.emplace();
  rp.header_limit(kMaxResponseHead);
  rp.body_limit(boost::none);
  rp.skip(x.head_request);
}

/// Parses the head that ends at `end` of the connection's buffer. Returns whether it is final
/// (not an interim 1xx, which is consumed and skipped).
template <typename Down, typename Up>
bool parse_response_head(Exchange<Down, Up>& x, std::size_t end, boost::system::error_code& ec) {
  http1::ResponseParser& rp = *x.ctx.response;
  const std::size_t used = rp.put(x.response_data().substr(0, end), ec);
  if (ec) {
    return true;
  }
  const unsigned status = rp.head().status;
  if (status == 101) {
    if (!x.ctx.upgrade) {
      ec = boost::beast::http::error::bad_status;  // no upgrade was forwarded
    }
    return true;  // else the upgrade was accepted: a tunnel (exchange_tunnel.hpp)
  }
  if (status >= 200) {
    return true;
  }
  x.conn->buffer.consume(used);  // an interim response: skipped
  new_response(x);
  return false;
}

/// Whether the response head is settled: parsed into `ctx.response` (interim 1xx skipped) or
/// failed (`ec`, e.g. header_limit past kMaxResponseHead). False when more bytes are needed;
/// `scanned` carries the search for the head's end across calls.
template <typename Down, typename Up>
bool response_head_ready(Exchange<Down, Up>& x, std::size_t& scanned,
                         boost::system::error_code& ec) {
  for (;;) {
    const std::size_t end = http1::find_head_end(x.response_data(), scanned);
    if (end == 0) {
      if (x.conn->buffer.size() >= kMaxResponseHead) {
        ec = boost::beast::http::error::header_limit;
        return true;
      }
      return false;
    }
    if (parse_response_head(x, end, ec)) {
      return true;
    }
    scanned = 0;
  }
}

/// Reads the response head into `ctx.response`, skipping interim 1xx responses. The caller
/// arms `x.up_read` (in duplex mode, the request pump does once the request is out). The
/// connection's watching read (pending since it was pooled or connected) receives the first
/// bytes; async_receive() starts a further one the same way.
template <typename Down, typename Up>
Task<boost::system::error_code> read_response_head(Exchange<Down, Up>& x) {
  new_response(x);
  std::size_t scanned = 0;
  boost::system::error_code ec;
  while (!response_head_ready(x, scanned, ec)) {
    auto [rec, n] = co_await x.conn->async_receive(pooled(x.up.ops));
    if (rec) {
      co_return x.up_read.expired() ? boost::system::error_code(beast::error::timeout) : rec;
    }
  }
  co_return ec;
}

/// An HTTP/2 stream (a Down with stream().can_take_head()) takes a head whose body has a known
/// length as fields: the same fields write_response_head() would write, without the HTTP/1.1
/// text the stream would parse back (docs/http2.md, "One stream, one HTTP/1.1 request").
template <typename Down>
bool head_as_fields(Down& down, const http1::ResponseHead& head, const http1::ResponseRewrite& rw) {
  if constexpr (requires { down.stream().can_take_head(); }) {
    if (head.status < 200 ||
        (head.framing != http1::Framing::kContentLength && head.framing != http1::Framing::kNone)) {
      return false;
    }
    auto& stream = down.stream();
    if (!stream.can_take_head()) {
      return false;
    }
    auto& fields = stream.response_fields();
    if (!http1::for_each_response_field(
            head, rw,
            [&](std::string_view name, std::string_view value) { fields.add(name, value); })) {
      return false;
    }
    stream.take_head(static_cast<int>(head.status),
                     head.framing == http1::Framing::kContentLength ? head.content_length : 0);
    return true;
  } else {
    return false;
  }
}

/// Composes the client's response head from the upstream's into `ctx.down_out` (or hands it to
/// an HTTP/2 stream as fields, head_as_fields()), with the body bytes already here. Returns
/// whether the body is chunked toward the client.
template <typename Down, typename Up>
bool compose_response(Exchange<Down, Up>& x, std::uint64_t& gathered,
                      boost::system::error_code& ec) {
  RequestContext& ctx = x.ctx;
  const http1::ResponseHead& head = ctx.response->head();
  http1::ResponseRewrite rw;
  rw.version = x.client_version == 10 ? 10 : 11;
  bool chunked = false;
  bool closes_itself = false;
  switch (head.framing) {
    case http1::Framing::kChunked:
      if (rw.version == 10) {  // HTTP/1.0 has no chunking: delimit by closing
        rw.framing = http1::BodyFraming::kUnchunk;
        closes_itself = true;
      } else {
        chunked = true;
      }
      break;
    case http1::Framing::kUntilClose:
      if (rw.version == 10) {
        closes_itself = true;
      } else {  // keep the client connection: chunk what the upstream delimits by closing
        rw.framing = http1::BodyFraming::kChunked;
        chunked = true;
      }
      break;
    case http1::Framing::kContentLength:
    case http1::Framing::kNone:
      break;
  }
  ctx.keep_alive = decide_keep_alive(
      ctx, {.draining = x.up.draining.load(std::memory_order_relaxed),
            .request_read = true,  // an exchange that ends before the request was read closes
            .closes_itself = closes_itself});
  rw.keep_alive = ctx.keep_alive;
  rw.request_id = ctx.request_id.view();
  rw.extra = ctx.extra_fields();
  ctx.down_out.clear();
  if (!head_as_fields(x.down.stream, head, rw)) {
    http1::write_response_head(head, rw, ctx.down_out);
  }
  ctx.response_parsed =
      gather_body(*ctx.response, x.conn->buffer, head.size, ctx.down_out, chunked, gathered, ec);
  return chunked;
}

/// Sends the composed response and relays the rest of its body. In the common case (the whole
/// body is already here) this is one write, tried at once: no coroutine of its own.
template <typename Down, typename Up>
Task<RelayResult> respond(Exchange<Down, Up>& x) {
  RequestContext& ctx = x.ctx;
  std::uint64_t gathered = 0;
  boost::system::error_code ec;
  const bool chunked = compose_response(x, gathered, ec);
  RelayResult r;
  if (ec) {
    r.read_error = ec;
    co_return r;
  }
  r = co_await relay_body(*ctx.response, ctx.response_parsed,
                          ReadEnd<Up>{x.conn->stream, x.conn->buffer, x.up_read, x.timeout()},
                          WriteEnd<Down>{x.down.stream, x.down.write_deadline, x.client_timeout()},
                          ctx.down_out, chunked, x.up.clock, x.up.ops);
  r.body_bytes += r.wrote ? gathered : 0;  // what compose_response() gathered went first
  co_return r;
}

}  // namespace detail
}  // namespace sluice::proxy
