// SPDX-License-Identifier: Apache-2.0
#pragma once

// The forward step, part 4 of 6: a request body that is still arriving streams up while the
// response streams down. Read exchange.hpp first.

#include <boost/asio/experimental/awaitable_operators.hpp>

#include "gateway/proxy/exchange/exchange_request.hpp"

namespace sluice::proxy {
namespace detail {

using namespace boost::asio::experimental::awaitable_operators;  // NOLINT(google-build-using-*)

/// Duplex mode, the request half: streams the client's body up, then starts the response
/// head's deadline (timeout_ms counts from the request being out).
template <typename Down, typename Up>
Task<RelayResult> pump_request(Exchange<Down, Up>& x) {
  RequestContext& ctx = x.ctx;
  const bool chunked = ctx.head().framing == http1::Framing::kChunked;
  const RelayResult r = co_await relay_body(
      *ctx.parser, ctx.head().size,
      ReadEnd<Down>{x.down.stream, x.down.buffer, x.down.read_deadline, x.client_timeout()},
      WriteEnd<Up>{x.conn->stream, x.up_write, x.timeout()}, ctx.up_out, chunked, x.up.clock,
      x.up.ops);
  x.request_done = true;
  if (r.read_error && !x.response_done) {
    // The client failed: stop waiting for the upstream (the flag covers a receive that has not
    // started its read yet; the cancel one that has).
    x.request_failed = true;
    StreamOps<Up>::cancel(x.conn->stream);
  } else if (r.complete && !x.head_received) {
    x.up_read.arm(x.up.clock.now() + x.timeout());
  }
  co_return r;
}

struct Received {
  boost::system::error_code head_error;
  RelayResult relay;
};

/// Duplex mode, the response half.
template <typename Down, typename Up>
Task<Received> receive(Exchange<Down, Up>& x, core::TimePoint sent_at) {
  Received r;
  if (x.request_failed) {
    r.head_error = net::error::operation_aborted;
    x.response_done = true;
    co_return r;
  }
  r.head_error = co_await read_response_head(x);
  x.head_received = !r.head_error;
  x.up_read.disarm();
  if (r.head_error) {
    x.response_done = true;
    if (!x.request_done && x.conn) {
      StreamOps<Up>::cancel(x.conn->stream);  // the upstream failed: stop a pending write to it
    }
    co_return r;
  }
  x.ctx.outcome.upstream_time = x.up.clock.now() - sent_at;
  r.relay = co_await respond(x);
  x.response_done = true;
  if (!x.request_done) {
    StreamOps<Down>::cancel(x.down.stream);  // an early answer: stop reading the client
  }
  co_return r;
}

/// The body is still arriving: stream it up while the response streams down, so an upstream
/// that answers early (or echoes while reading) never deadlocks the exchange.
template <typename Down, typename Up>
Task<void> duplex(Exchange<Down, Up>& x) {
  RequestContext& ctx = x.ctx;
  const core::TimePoint sent_at = x.up.clock.now();
  auto [pump, received] = co_await (pump_request(x) && receive(x, sent_at));
  x.up_read.disarm();
  ctx.outcome.bytes_in = pump.body_bytes;
  if (!received.head_error) {
    if (!received.relay.wrote && received.relay.read_error && !received.relay.write_error) {
      co_await fail(x, GatewayError::kUpstreamReset);
      co_return;
    }
    finish(x, received.relay, pump.complete);
    co_return;
  }
  if (const auto error = body_read_failure(pump.read_error)) {
    co_await fail(x, *error);  // 413 past max_body_bytes, 400 for bad chunking
  } else if (pump.read_error) {
    x.close_upstream();  // the client is gone (or stalled): nobody to answer
    ctx.outcome.upstream = UpstreamResult::kNotSent;
    ctx.outcome.answer_complete = false;
  } else {
    const bool timed_out = received.head_error == beast::error::timeout ||
                           pump.write_error == beast::error::timeout || x.up_read.expired();
    co_await fail(x, timed_out ? GatewayError::kUpstreamTimeout : GatewayError::kUpstreamReset);
  }
}

}  // namespace detail
}  // namespace sluice::proxy
