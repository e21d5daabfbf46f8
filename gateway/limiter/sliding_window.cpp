// SPDX-License-Identifier: Apache-2.0
#include "gateway/limiter/sliding_window.hpp"

namespace sluice::limiter {
namespace {

// The decision is written once for both ring forms (dense CountRing, SparseCountRing): they
// share the bucket grid and the accessors used here, so they decide alike.

/// When the bucket at `index` (from the oldest) leaves the window: N widths after its start.
template <typename Ring>
core::Duration until_leaves(const Ring& ring, std::size_t index, core::TimePoint now) {
  const auto window = ring.width() * static_cast<std::int64_t>(ring.size());
  return ring.start_from_oldest(index) + window - now;
}

/// Until the oldest counted request leaves the window; zero when none is counted.
template <typename Ring>
core::Duration reset_of(const Ring& ring, core::TimePoint now) {
  if (ring.total() == 0) {
    return core::Duration::zero();
  }
  const std::size_t oldest = ring.find_from_oldest([](std::uint32_t c) { return c != 0; });
  return until_leaves(ring, oldest, now);
}

/// Until enough counts have left the window for the total to drop below `limit`.
template <typename Ring>
core::Duration retry_after_of(const Ring& ring, std::uint32_t limit, core::TimePoint now) {
  if (limit == 0) {
    // Nothing is ever admitted (a blocking override): suggest one full window.
    return ring.width() * static_cast<std::int64_t>(ring.size());
  }
  const std::uint64_t must_leave = std::uint64_t{ring.total()} - limit + 1;
  std::uint64_t left = 0;
  const std::size_t index = ring.find_from_oldest([&](std::uint32_t c) {
    left += c;
    return left >= must_leave;
  });
  return until_leaves(ring, index, now);
}

template <typename Ring>
LimitDecision decide_on(Ring& ring, std::uint32_t limit, core::TimePoint now) {
  ring.advance(now);
  LimitDecision d;
  d.limit = limit;
  if (ring.total() < limit) {
    ring.add(1);
    d.allowed = true;
    d.remaining = limit - ring.total();
  } else {
    d.retry_after = retry_after_of(ring, limit, now);
  }
  d.reset = reset_of(ring, now);
  return d;
}

template <typename Ring>
KeyState inspect_on(Ring& ring, std::uint32_t limit, core::TimePoint now) {
  ring.advance(now);
  KeyState s;
  s.count = ring.total();
  s.limit = limit;
  s.remaining = s.count < limit ? limit - s.count : 0;
  s.reset = reset_of(ring, now);
  return s;
}

}  // namespace

LimitDecision decide(CountRing ring, std::uint32_t limit, core::TimePoint now) noexcept {
  return decide_on(ring, limit, now);
}

LimitDecision decide(SparseCountRing ring, std::uint32_t limit, core::TimePoint now) {
  return decide_on(ring, limit, now);
}

KeyState inspect(CountRing ring, std::uint32_t limit, core::TimePoint now) noexcept {
  return inspect_on(ring, limit, now);
}

KeyState inspect(SparseCountRing ring, std::uint32_t limit, core::TimePoint now) {
  return inspect_on(ring, limit, now);
}

}  // namespace sluice::limiter
