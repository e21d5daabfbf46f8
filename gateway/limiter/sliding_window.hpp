// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>

#include "gateway/core/clock.hpp"
#include "gateway/core/rolling_window.hpp"
#include "gateway/limiter/sparse_count_ring.hpp"

namespace sluice::limiter {

/// The counts of one user key under one policy: a ring of per-bucket admitted-request counts.
using CountRing = core::RingRef<std::uint32_t>;

/// The outcome of one rate-limit decision (docs/behaviour.md "Limits" and "Precise semantics").
struct LimitDecision {
  bool allowed = false;
  std::uint32_t limit = 0;      ///< The effective limit (after any override).
  std::uint32_t remaining = 0;  ///< Requests left in the window AFTER this one was counted.
  /// Until the oldest counted bucket leaves the window (the `t` of an admitted response);
  /// zero when nothing is counted.
  core::Duration reset{};
  /// Denied only: until a request would be admitted again (`Retry-After`); zero when allowed.
  core::Duration retry_after{};
  /// Denied because the shared store could not decide (`on_error: deny`): answered 503
  /// limit_store_unavailable, not 429 (docs/behaviour.md "Precise semantics").
  bool unavailable = false;
};

/// The state of a key without deciding anything (admin lookups).
struct KeyState {
  std::uint32_t count = 0;  ///< Admitted requests in the window now.
  std::uint32_t limit = 0;
  std::uint32_t remaining = 0;
  core::Duration reset{};
};

/// Decides one request at `now`: admitted iff the window total (the current bucket and the
/// N-1 before it) is below `limit`; only an admitted request is counted. Advances the ring.
/// Guarantee: in any interval of length window - window/N at most `limit` requests are
/// admitted, because such an interval touches at most N buckets, all of which the last admission
/// in it saw.
LimitDecision decide(CountRing ring, std::uint32_t limit, core::TimePoint now) noexcept;
/// The same decision over a sparse ring (the memory store's per-key form): identical results.
/// May allocate when the key's fourth counted bucket spills to the heap.
LimitDecision decide(SparseCountRing ring, std::uint32_t limit, core::TimePoint now);

/// The key's state at `now`, counting nothing (the ring is advanced, which changes no count).
KeyState inspect(CountRing ring, std::uint32_t limit, core::TimePoint now) noexcept;
KeyState inspect(SparseCountRing ring, std::uint32_t limit, core::TimePoint now);

}  // namespace sluice::limiter
