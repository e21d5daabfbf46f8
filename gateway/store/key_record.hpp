// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <span>

#include "gateway/core/clock.hpp"
#include "gateway/core/rolling_window.hpp"
#include "gateway/limiter/sliding_window.hpp"

namespace sluice::store {

/// Geometry of one policy's rings: `buckets` buckets of `width`.
struct RingShape {
  std::uint32_t buckets = 1;
  core::Duration width{1};

  [[nodiscard]] core::Duration window() const { return width * buckets; }
  friend bool operator==(const RingShape&, const RingShape&) = default;
};

// Layout of one key's record in a RecordTable (or of one eviction-sketch ring): the ring's
// cursor and total, then `buckets` uint32 counts. 16 + 4N bytes: 56 at N = 10.
using CountState = core::RingState<std::uint32_t>;
static_assert(sizeof(CountState) == 16);
inline constexpr std::size_t kRecordHeaderBytes = sizeof(CountState);

[[nodiscard]] inline std::size_t record_bytes(const RingShape& shape) {
  return kRecordHeaderBytes + sizeof(std::uint32_t) * shape.buckets;
}

[[nodiscard]] inline CountState& state_of(std::byte* record) {
  return *std::launder(reinterpret_cast<CountState*>(record));
}

/// The ring stored in `record` (valid while the record does not move).
[[nodiscard]] inline limiter::CountRing ring_of(std::byte* record, const RingShape& shape) {
  auto* counts = std::launder(reinterpret_cast<std::uint32_t*>(record + kRecordHeaderBytes));
  return {state_of(record), std::span<std::uint32_t>(counts, shape.buckets), shape.width};
}

/// True when nothing the record counts is still in the window at `now`: forgetting the key
/// changes no future decision. Reads only; does not advance the ring.
[[nodiscard]] inline bool is_idle(std::byte* record, const RingShape& shape, core::TimePoint now) {
  const CountState& s = state_of(record);
  return s.total == 0 || core::TimePoint(core::Duration(s.head_start)) + shape.window() <= now;
}

/// Raises every bucket of `into` to at least the same bucket of `from` (both on one grid).
inline void raise_to(limiter::CountRing into, limiter::CountRing from, core::TimePoint now) {
  into.advance(now);
  from.advance(now);
  for (std::size_t i = 0; i < into.size(); ++i) {
    into.set_from_oldest(i, std::max(into.from_oldest(i), from.from_oldest(i)));
  }
}

/// Rebuilds `from` (old shape) into the empty `into` (new shape): whatever `from` holds at `now`
/// lands in the new current bucket, so no count is lost or invented (docs/behaviour.md "Precise
/// semantics").
inline void carry_over(limiter::CountRing into, limiter::CountRing from, core::TimePoint now) {
  from.advance(now);
  into.reset(now);
  into.add(from.total());
}

}  // namespace sluice::store
