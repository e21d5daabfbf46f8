// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/limiter/sliding_window.hpp"
#include "gateway/store/key_record.hpp"

namespace sluice::store {

/// What the memory store remembers about keys it had to evict while they still had requests in
/// the window, so that such a key never comes back to a fresh allowance (the failure of an LRU
/// that simply forgets, like Envoy's 20-entry cache). A fixed array of rings without keys: an
/// evicted key's counts are folded into ring[index(key)] by per-bucket maximum, and a key that
/// starts being tracked again starts from that ring. Conservative by construction: a key sharing
/// a ring with an evicted key may start with counts it did not make (limited early, never
/// admitted beyond its limit); the counts age out of the window like any other.
/// Not thread-safe: the owning shard's lock covers it.
class EvictionSketch {
 public:
  EvictionSketch(std::size_t rings, const RingShape& shape);

  /// Folds the counts of an evicted key into its ring.
  void remember(std::uint64_t key, limiter::CountRing evicted, core::TimePoint now);
  /// Copies what is remembered for `key` into `fresh`, a ring just reset at `now`.
  void seed(std::uint64_t key, limiter::CountRing fresh, core::TimePoint now);
  /// Moves every ring to a new geometry, carrying totals over (docs/behaviour.md "Precise
  /// semantics").
  void reshape(const RingShape& shape, core::TimePoint now);
  /// True when every remembered count has left the window: the sketch can be dropped.
  [[nodiscard]] bool is_idle(core::TimePoint now);
  [[nodiscard]] std::size_t memory_bytes() const { return data_.size(); }

 private:
  [[nodiscard]] std::byte* record_for(std::uint64_t key);

  RingShape shape_;
  std::size_t rings_;
  std::size_t record_bytes_;
  std::vector<std::byte> data_;  // zero bytes are a valid empty ring
};

}  // namespace sluice::store
