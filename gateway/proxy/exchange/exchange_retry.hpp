// SPDX-License-Identifier: Apache-2.0
#pragma once

// The forward step, part 7: retries (docs/endpoint-health.md "Retries"). Read exchange.hpp
// first.

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <memory>
#include <string_view>

#include "gateway/proxy/exchange/exchange_duplex.hpp"
#include "gateway/proxy/request/upstream_outcome.hpp"
#include "gateway/proxy/steps/record_step.hpp"

namespace sluice::proxy {

/// The largest request body kept for a retry (a larger one is never retried).
inline constexpr std::uint64_t kMaxReplayBody = 64 * 1024;

namespace detail {

/// Whether the request can be sent again as it was: its whole body is here (in the client's
/// buffer, which nothing consumes until the exchange ends) and at most kMaxReplayBody.
template <typename Down, typename Up>
bool replayable(const Exchange<Down, Up>& x) {
  const http1::RequestHead& head = x.ctx.head();
  if (x.request_parsed != 0) {  // sent sequentially: ctx.up_out holds all of it
    return x.request_parsed - head.size <= kMaxReplayBody;
  }
  if (body_streams(x)) {
    return false;
  }
  return head.framing != http1::Framing::kContentLength || head.content_length <= kMaxReplayBody;
}

/// Whether a request whose body is still arriving should be read whole before it goes upstream,
/// so that a failed attempt can be retried: the backend retries, the method may be retried,
/// and the body has a length of at most kMaxReplayBody.
template <typename Down, typename Up>
bool worth_keeping(const Exchange<Down, Up>& x) {
  const auto& retry = x.backend.config().retry;
  const http1::RequestHead& head = x.ctx.head();
  return retry && retry->attempts > 1 && (x.idempotent || retry->non_idempotent) &&
         !x.ctx.upgrade && head.framing == http1::Framing::kContentLength &&
         head.content_length <= kMaxReplayBody;
}

/// Reads the rest of a Content-Length body (worth_keeping()) from the client into `x.kept`, and
/// gathers the whole body (the part in the client's buffer and the rest) after the composed head
/// in `ctx.up_out`, so the request leaves in one write and can leave again. False with `ec` set
/// when the client failed or timed out (nothing was sent upstream).
template <typename Down, typename Up>
Task<bool> keep_body(Exchange<Down, Up>& x, boost::system::error_code& ec) {
  RequestContext& ctx = x.ctx;
  const std::size_t head_size = ctx.head().size;
  x.request_parsed = gather_body(*ctx.parser, x.down.buffer, head_size, ctx.up_out, false,
                                 ctx.outcome.bytes_in, ec);
  if (ec) {
    co_return false;
  }
  const std::uint64_t missing = ctx.head().content_length - ctx.outcome.bytes_in;
  x.kept = std::make_unique<char[]>(missing);  // NOLINT(modernize-avoid-c-arrays): a raw block
  std::size_t have = 0;
  x.down.read_deadline.arm(x.up.clock.now() + x.client_timeout());
  while (have < missing) {
    auto [rec, n] = co_await x.down.stream.async_read_some(
        net::buffer(x.kept.get() + have, missing - have), pooled(x.up.ops));
    if (rec) {
      ec = x.down.read_deadline.expired() ? boost::system::error_code(beast::error::timeout) : rec;
      x.down.read_deadline.disarm();
      co_return false;
    }
    have += n;
  }
  x.down.read_deadline.disarm();
  std::string_view rest(x.kept.get(), missing);
  while (!rest.empty() && !ctx.parser->is_done()) {
    const std::size_t n = ctx.parser->put(rest, ec);
    if (ec) {
      co_return false;
    }
    if (const std::string_view piece = ctx.parser->piece(); !piece.empty()) {
      ctx.up_out.add(piece);
      ctx.outcome.bytes_in += piece.size();
    }
    rest.remove_prefix(n);
  }
  co_return ctx.parser->is_done();
}

/// Whether `retry.on` names this failed attempt.
inline bool retry_on(const config::RetryConfig& retry, UpstreamResult result, unsigned status) {
  switch (result) {
    case UpstreamResult::kConnectError:
      return retry.on_connect_error;
    case UpstreamResult::kReset:
      return retry.on_reset;
    case UpstreamResult::kTimeout:
      return retry.on_timeout;
    case UpstreamResult::kResponse:
      return std::find(retry.on_statuses.begin(), retry.on_statuses.end(),
                       static_cast<int>(status)) != retry.on_statuses.end();
    case UpstreamResult::kNotSent:
      return false;
  }
  return false;
}

/// The attempt that failed with (`result`, `status`) as the breaker window, the upstream
/// metrics and outlier detection see every attempt (the last one is record_step()'s).
template <typename Down, typename Up>
void record_failed_attempt(Exchange<Down, Up>& x, UpstreamResult result, unsigned status,
                           core::TimePoint now) {
  const Backend& backend = x.backend;
  const OutcomeRow row = classify(result, backend.is_failure(status));
  if (row.metric) {
    backend.metrics().count(*row.metric);
  }
  if (row.breaker != BreakerRecord::kNothing) {
    backend.breaker().record(row.breaker == BreakerRecord::kFailure ? breaker::Outcome::kFailure
                                                                    : breaker::Outcome::kSuccess,
                             now);
    note_endpoint_result(backend, x.endpoint_ref(), row.breaker == BreakerRecord::kFailure, now);
  }
}

/// The wait before retry number `retry` (1, 2, ...): `backoff_ms` doubled per earlier retry,
/// times a uniform draw in [0.5, 1.5) so that clients failing together do not retry together.
inline core::Duration backoff_for(const config::RetryConfig& retry, unsigned number,
                                  BalanceCursor& random) {
  const double unit = static_cast<double>(random.random() >> 11U) * 0x1.0p-53;
  const auto base = std::chrono::duration<double>(retry.backoff) * (1U << (number - 1));
  return std::chrono::duration_cast<core::Duration>(base * (0.5 + unit));
}

/// Decides whether the attempt that failed with (`result`, `status`) is retried, and if so
/// records it, waits the backoff and clears the way for the next attempt (which picks another
/// endpoint). False: answer the client with this failure.
/// A retry needs, in this order: a `retry` object with attempts left, a failure `retry.on`
/// names, an idempotent method (or `non_idempotent`), no upgrade, a replayable body, a breaker
/// not dropping, and a slot in the retry budget (counted `budget_exhausted` when that is all
/// that is missing).
template <typename Down, typename Up>
Task<bool> retry(Exchange<Down, Up>& x, UpstreamResult result, unsigned status) {
  const auto& retry = x.backend.config().retry;
  if (!retry || x.ctx.outcome.attempts >= retry->attempts || !retry_on(*retry, result, status) ||
      (!x.idempotent && !retry->non_idempotent) || x.ctx.upgrade || !replayable(x) ||
      x.backend.breaker().shedding()) {
    co_return false;
  }
  health::EndpointHealth& health = x.backend.health();
  if (x.retry_slot == nullptr) {  // one slot covers every retry of this request
    if (!health.start_retry(retry->min_retry_concurrency, retry->budget_percent)) {
      x.backend.metrics().count(metrics::RetryResult::kBudgetExhausted);
      co_return false;
    }
    x.retry_slot = &health;
  }
  record_failed_attempt(x, result, status, x.up.clock.now());
  x.backend.metrics().count(metrics::RetryResult::kAttempted);
  x.close_upstream();
  x.ctx.response.reset();
  x.in_flight.reset();
  const core::Duration wait = backoff_for(*retry, x.ctx.outcome.attempts, x.up.cursor);
  if (wait > core::Duration::zero()) {
    net::basic_waitable_timer<std::chrono::steady_clock,
                              net::wait_traits<std::chrono::steady_clock>, Executor>
        timer(co_await net::this_coro::executor, wait);
    co_await timer.async_wait(pooled(x.up.ops));
  }
  ++x.ctx.outcome.attempts;
  co_return true;
}

}  // namespace detail
}  // namespace sluice::proxy
