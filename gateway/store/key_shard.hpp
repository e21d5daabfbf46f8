// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/unordered/unordered_flat_map.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/limiter/sliding_window.hpp"
#include "gateway/store/eviction_sketch.hpp"
#include "gateway/store/key_record.hpp"
#include "gateway/store/key_records.hpp"

namespace sluice::store {

/// Hashed user key -> requests, for one policy's per-key overrides.
using OverrideMap = boost::unordered_flat_map<std::uint64_t, std::uint32_t>;

/// A policy as one shard needs it.
struct SlotParams {
  std::uint32_t requests = 0;
  RingShape shape;
  std::shared_ptr<const OverrideMap> overrides;  ///< null when the policy has none
};

struct ShardStats {
  std::size_t tracked_keys = 0;
  std::uint64_t evicted_idle = 0;
  std::uint64_t evicted_active = 0;
  std::size_t memory_bytes = 0;
};

/// One shard of the memory store: the keys whose hash falls here, for every policy (a "slot"
/// per policy id), under one short-held mutex, plus this shard's share of `store.max_keys`.
/// Keys of all policies share the cap, so the store-wide cap is exact: the sum of the shards'.
///
/// At the cap, a new key makes room idle-first: the shard forgets every idle key (nothing in the
/// window: forgetting it changes no decision), at most once per bucket boundary since keys only
/// turn idle at boundaries, so the scan is amortised over the keys it frees and cannot be
/// forced per request. Only when no key is idle does it evict the least recently active key of a
/// sample, whose counts go to the slot's EvictionSketch so it cannot come back to a fresh
/// allowance.
/// Thread-safe; aligned to a cache line so shards never share one. Decisions read the clock
/// under the lock, so they are totally ordered in time per key.
class alignas(64) KeyShard {
 public:
  explicit KeyShard(std::size_t max_keys) : max_keys_(max_keys) {}

  /// Decides one request of `key` under policy slot `slot` (docs/behaviour.md "Limits") and counts
  /// it if admitted. A slot that was never configured or was removed admits. `held_elsewhere`
  /// requests counted outside this store (other replicas, `store.mode: "hybrid"`) take their part
  /// of the limit first; the decision still reports the whole limit.
  limiter::LimitDecision decide(std::uint32_t slot, std::uint64_t key, const core::Clock& clock,
                                std::uint32_t held_elsewhere = 0);
  /// The key's state as the next decision would see it.
  limiter::KeyState inspect(std::uint32_t slot, std::uint64_t key, const core::Clock& clock);
  /// Installs or updates a policy slot; a new shape carries every key's counts over.
  void configure(std::uint32_t slot, const SlotParams& params, const core::Clock& clock);
  /// Drops a policy slot and all its keys.
  void remove(std::uint32_t slot);
  /// Forgets every idle key (and idle sketches); returns how many keys were dropped.
  std::size_t sweep(const core::Clock& clock);

  [[nodiscard]] std::size_t tracked(std::uint32_t slot) const;
  [[nodiscard]] ShardStats stats() const;
  [[nodiscard]] std::size_t max_keys() const { return max_keys_; }

 private:
  struct Slot {
    bool active = false;
    SlotParams params;
    KeyRecords records{RingShape{}, 1};
    std::unique_ptr<EvictionSketch> sketch;  ///< created on the first active eviction
    std::size_t cursor = 0;                  ///< where eviction sampling resumes
    core::TimePoint next_sweep{};            ///< no key can turn idle before this
  };

  Slot* active_slot(std::uint32_t slot);
  std::byte* track_new_key(Slot& slot, std::uint64_t key, core::TimePoint now);
  /// Makes room for one key (callers are at the cap).
  void evict_one(core::TimePoint now);
  /// Folds the victim's counts into its slot's sketch.
  void remember(Slot& slot, std::size_t victim, core::TimePoint now);
  /// Forgets the slot's idle keys (and an idle sketch); returns how many keys.
  std::size_t sweep_slot(Slot& slot, core::TimePoint now);
  /// Sweeps every slot due for it, as the first step of making room.
  void sweep_due(core::TimePoint now);
  std::size_t pick_victim(Slot& slot, core::TimePoint now);
  void reshape(Slot& slot, const RingShape& shape, core::TimePoint now);

  mutable std::mutex mutex_;
  std::vector<Slot> slots_;
  const std::size_t max_keys_;
  std::size_t size_ = 0;  ///< keys tracked across all slots
  std::uint64_t evicted_idle_ = 0;
  std::uint64_t evicted_active_ = 0;
};

}  // namespace sluice::store
