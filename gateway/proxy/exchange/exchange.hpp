// SPDX-License-Identifier: Apache-2.0
#pragma once

// The forward step (docs/architecture.md, "The request path"): exchange() below, and its
// helpers in exchange_state.hpp, exchange_response.hpp, exchange_respond.hpp,
// exchange_request.hpp, exchange_duplex.hpp, exchange_retry.hpp and exchange_tunnel.hpp
// (templates, so headers; split to stay readable).

#include <cstddef>
#include <optional>

#include "gateway/proxy/exchange/exchange_respond.hpp"
#include "gateway/proxy/exchange/exchange_retry.hpp"

namespace sluice::proxy {

/// Step 4, forward (docs/behaviour.md "Upstreams"): sends the routed request in `ctx` to its
/// backend and relays the response to the client.
/// - a pooled connection, or a new one within `connect_timeout_ms`; when connecting fails, one
///   other endpoint is tried (nothing was sent), then 502 `upstream_connect_error`;
/// - the request head is the client's bytes with the hygiene edits (http1::write_request_head);
///   a bodyless or fully buffered request leaves in one write, a streaming body goes up while
///   the response comes down (duplex), so an early or echoing upstream never deadlocks;
/// - no response head within `timeout_ms` of the request being sent -> 504; a reset or close
///   before the head -> 502 `upstream_reset`; one failing mid-body cuts the client connection;
/// - a reused connection that turns out closed is retried once on a fresh connection when the
///   request is idempotent or nothing could be sent;
/// - with the backend's `retry`, a failed attempt (connect error, reset, timeout, or a status
///   `retry.on` names) is sent again to another endpoint when detail::retry() allows it
///   (docs/endpoint-health.md "Retries"); `ctx.outcome.attempts` counts the attempts;
/// - a `101` accepting a forwarded upgrade turns both connections into a tunnel (tunnel()).
/// Fills `ctx.outcome` and `ctx.keep_alive`; writes every byte the client gets, a gateway
/// error included. The common case (a pooled connection, a small request and response) runs in
/// this one coroutine: its helpers are plain functions until something must wait longer.
/// Runs on the worker's thread; never throws.
// GCC 12 reports -Wmismatched-new-delete on this coroutine's own frame once its body has a
// loop: Asio's awaitable_frame_base defines both the operator new and the operator delete the
// frame uses, so the pairing is right; the warning is GCC's inliner losing track of that.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
template <typename Down, typename Up>
Task<void> exchange(RequestContext& ctx, Downstream<Down> down, UpstreamContext<Up>& up) {
  // The common case (a pooled connection, a small request and response) suspends only for the
  // response head; the helpers are plain functions, so this frame stays small enough for Asio
  // to recycle it (docs/architecture.md, "Memory").
  detail::Exchange<Down, Up> x(ctx, down, up);
  ctx.outcome.attempts = 1;
  for (;;) {  // one pass per attempt; a retry (exchange_retry.hpp) goes round again
    if (!detail::take_pooled(x, ctx.outcome.attempts > 1 ? 1 : 0)) {
      co_await detail::connect_any(x);
    }
    ctx.outcome.endpoint = &x.endpoint_ref();
    if (!x.conn) {
      if (co_await detail::retry(x, UpstreamResult::kConnectError, 0)) {
        continue;
      }
      down.buffer.consume(ctx.head().size);
      co_await detail::fail(x, GatewayError::kUpstreamConnect);
      co_return;
    }
    x.conn->mark_active(x.backend.metrics());
    x.in_flight.emplace(x.backend.balancer().track(x.endpoint));
    boost::system::error_code ec;
    if (x.request_parsed == 0) {  // the first attempt to get this far composes the request
      if (detail::expects_continue(x) && !co_await detail::send_continue(x)) {
        x.close_upstream();
        ctx.outcome.answer_complete = false;
        co_return;
      }
      detail::compose_request(x);
      if (detail::body_streams(x) && !detail::worth_keeping(x)) {
        co_await detail::duplex(x);
        co_return;
      }
      if (detail::body_streams(x)) {  // read it all first, so that it can be sent again
        const bool kept = co_await detail::keep_body(x, ec);
        if (!kept) {
          x.close_upstream();
          ctx.outcome.attempts = 0;  // nothing went upstream: the client failed
          ctx.outcome.answer_complete = false;
          co_return;
        }
        x.sent_at = up.clock.now();
        ec = co_await detail::send_rest(x, 0, x.sent_at);
        x.request_write_failed = static_cast<bool>(ec);
      } else if (!detail::send_request_now(x, ec)) {
        // The body is absent or already buffered: everything in one write, then the response.
        ec = co_await detail::send_rest(x, x.sent.written, x.sent_at);
      }
    } else {  // a retry: the same bytes again (ctx.up_out still holds them)
      x.sent_at = up.clock.now();
      ec = co_await detail::send_rest(x, 0, x.sent_at);
      x.request_write_failed = static_cast<bool>(ec);
    }
    if (!ec) {
      x.up_read.arm(x.sent_at + x.timeout());
      detail::new_response(x);
      std::size_t scanned = 0;  // the response head, as read_response_head() without its frame
      while (!detail::response_head_ready(x, scanned, ec)) {
        // The watching read, pending since the connection was pooled: no system call of its own.
        auto [rec, n] = co_await x.conn->async_receive(pooled(up.ops));
        if (rec) {
          ec = x.up_read.expired() ? boost::system::error_code(beast::error::timeout) : rec;
          break;
        }
      }
      x.up_read.disarm();
    }
    if (ec) {
      const auto failed =
          co_await detail::sequential_failed(x, x.request_parsed, x.request_write_failed, ec);
      if (!failed) {
        co_return;  // a fresh connection answered
      }
      if (co_await detail::retry(x, detail::result_of(*failed), 0)) {
        continue;
      }
      down.buffer.consume(x.request_parsed);
      co_await detail::fail(x, *failed);
      co_return;
    }
    const auto& retry = x.backend.config().retry;
    const unsigned status = ctx.response->head().status;
    if (retry && detail::retry_on(*retry, UpstreamResult::kResponse, status)) {
      // (Awaited apart from the condition: GCC 12 miscompiles co_await inside &&.)
      const bool again = co_await detail::retry(x, UpstreamResult::kResponse, status);
      if (again) {
        continue;
      }
    }
    break;
  }
  if (detail::switches_protocols(x)) {
    down.buffer.consume(x.request_parsed);
    ctx.outcome.upstream_time = up.clock.now() - x.sent_at;
    co_await detail::tunnel(x);
    co_return;
  }
  bool chunked = false;
  std::uint64_t gathered = 0;
  std::optional<RelayResult> relay = detail::respond_now(x, chunked, gathered);
  if (!relay) {
    relay = co_await detail::respond_rest(x, x.sent, chunked, gathered);
  }
  if (!relay->wrote && relay->read_error && !relay->write_error) {
    co_await detail::fail(x, GatewayError::kUpstreamReset);  // a bad body before any byte went
    co_return;
  }
  detail::finish(x, *relay, true);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace sluice::proxy
