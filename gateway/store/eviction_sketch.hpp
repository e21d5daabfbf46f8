// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/limiter/sparse_count_ring.hpp"
#include "gateway/store/key_record.hpp"

namespace sluice::store {

/// What the memory store remembers about keys it had to evict while they still had requests in
/// the window, so that such a key never comes back to a fresh allowance (the failure of an LRU
/// that simply forgets, like Envoy's 20-entry cache). A fixed array of rings without keys: an
/// evicted key's counts are folded into ring[index(key)] by per-bucket maximum, and a key that
/// starts being tracked again starts from that ring. Conservative by construction: a key sharing
/// a ring with an evicted key may start with counts it did not make (limited early, never
/// admitted beyond its limit); the counts age out of the window like any other. The rings are
/// sparse like the keys' (docs/architecture.md "Sparse key state"): 40 bytes each until one
/// remembers more than six buckets. Not thread-safe: the owning shard's lock covers it.
class EvictionSketch {
 public:
  EvictionSketch(std::size_t rings, const RingShape& shape);
  ~EvictionSketch();
  EvictionSketch(const EvictionSketch&) = delete;
  EvictionSketch& operator=(const EvictionSketch&) = delete;

  /// Folds the counts of an evicted key into its ring.
  void remember(std::uint64_t key, limiter::SparseCountRing evicted, core::TimePoint now);
  /// Copies what is remembered for `key` into `fresh`, a ring just reset at `now`.
  void seed(std::uint64_t key, limiter::SparseCountRing fresh, core::TimePoint now);
  /// Moves every ring to a new geometry, carrying totals over (docs/behaviour.md "Precise
  /// semantics").
  void reshape(const RingShape& shape, core::TimePoint now);
  /// True when every remembered count has left the window: the sketch can be dropped.
  [[nodiscard]] bool is_idle(core::TimePoint now) const;
  [[nodiscard]] std::size_t memory_bytes() const {
    return rings_.size() * sizeof(limiter::SparseRingState) + block_bytes_;
  }

 private:
  [[nodiscard]] limiter::SparseCountRing ring_for(std::uint64_t key);
  [[nodiscard]] limiter::SparseCountRing ring_at(std::size_t index) {
    return {rings_[index], shape_.buckets, shape_.width, &block_bytes_};
  }

  RingShape shape_;
  std::vector<limiter::SparseRingState> rings_;  // zero bytes are a valid empty ring
  std::size_t block_bytes_ = 0;
};

}  // namespace sluice::store
