// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include "gateway/core/clock.hpp"
#include "gateway/limiter/sliding_window.hpp"

namespace sluice::store {

/// Geometry of one policy's rings: `buckets` buckets of `width`.
struct RingShape {
  std::uint32_t buckets = 1;
  core::Duration width{1};

  [[nodiscard]] core::Duration window() const { return width * buckets; }
  friend bool operator==(const RingShape&, const RingShape&) = default;
};

// A tracked key's record in a KeyRecords table: a sparse ring, 40 bytes whatever the bucket
// count (docs/architecture.md "Sparse key state").
using KeyRingState = limiter::SparseRingState;
inline constexpr std::size_t kKeyRecordBytes = sizeof(KeyRingState);

[[nodiscard]] inline KeyRingState& key_ring_state_of(std::byte* record) {
  return *std::launder(reinterpret_cast<KeyRingState*>(record));
}

/// When the ring's head bucket started (what eviction compares: the least recently active key).
[[nodiscard]] inline core::TimePoint head_start(const KeyRingState& s, const RingShape& shape) {
  return core::TimePoint(shape.width * s.head);
}

/// True when nothing a ring counts is still in the window at `now`: forgetting it changes no
/// future decision. Reads only; does not advance the ring.
[[nodiscard]] inline bool is_idle(std::int64_t head, std::uint32_t total, const RingShape& shape,
                                  core::TimePoint now) {
  return total == 0 || core::TimePoint(shape.width * head) + shape.window() <= now;
}
[[nodiscard]] inline bool is_idle(const KeyRingState& s, const RingShape& shape,
                                  core::TimePoint now) {
  return is_idle(s.head, s.total, shape, now);
}

/// Rebuilds `from` (old shape) into the empty `into` (new shape): whatever `from` holds at `now`
/// lands in the new current bucket, so no count is lost or invented (docs/behaviour.md "Precise
/// semantics").
inline void carry_over(limiter::SparseCountRing into, limiter::SparseCountRing from,
                       core::TimePoint now) {
  from.advance(now);
  into.reset(now);
  into.add(from.total());
}

}  // namespace sluice::store
