// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/core/keyed_hash.hpp"
#include "gateway/store/key_shard.hpp"
#include "gateway/store/limit_store.hpp"

namespace sluice::store {

/// The embedded limit store (`store.type: "memory"`): one sliding window per (policy, user key)
/// in a sharded table whose size is capped at `max_keys` across all policies. Keys are held only
/// as a keyed 64-bit hash (SipHash-1-3 under a per-store random key): no credential is kept in
/// memory, and two distinct keys share a window only on a hash collision (probability about
/// n^2 / 2^65: 3e-8 at a million keys). try_decide() always answers at once. Thread-safe: a
/// decision takes one shard's lock; apply/remove are serialised among themselves and lock shards
/// one by one. The clock must outlive the store.
class MemoryStore final : public LimitStore {
 public:
  struct Options {
    std::uint64_t max_keys = 1'000'000;
    /// Power of two; 0 picks one from max_keys (up to 128, at least 64 keys a shard).
    std::size_t shards = 0;
  };

  MemoryStore(const core::Clock& clock, Options options,
              core::KeyedHash hash = core::KeyedHash::with_random_key());

  /// Slots only separate the decision counters (no connections): any thread may use any slot.
  StoreSlot attach(boost::asio::io_context& ioc) override;
  void start() override {}
  void stop() override {}
  /// Forgets idle keys every kSweepEvery (sweep_idle()).
  void tick(StoreSlot slot) override;
  static constexpr core::Duration kSweepEvery = std::chrono::seconds(10);

  PolicyId apply(const limiter::Policy& policy) override;
  bool remove(std::string_view name) override;
  [[nodiscard]] std::optional<PolicyId> find(std::string_view name) const override;
  [[nodiscard]] std::optional<limiter::LimitDecision> try_decide(StoreSlot slot, PolicyId policy,
                                                                 std::string_view key) override {
    count_decision(slot);
    return decide_now(policy, key);
  }
  /// Decides now; the completion runs later on its executor.
  void async_decide(StoreSlot slot, PolicyId policy, std::string_view key,
                    DecisionCompletion completion) override;
  [[nodiscard]] std::optional<limiter::KeyState> try_inspect(StoreSlot /*slot*/, PolicyId policy,
                                                             std::string_view key) override {
    return inspect_now(policy, key);
  }
  void async_inspect(StoreSlot slot, PolicyId policy, std::string_view key,
                     InspectCompletion completion) override;
  [[nodiscard]] std::size_t tracked_keys(PolicyId policy) const override;

  /// The synchronous core of async_decide. `held_elsewhere`: see KeyShard::decide.
  limiter::LimitDecision decide_now(PolicyId policy, std::string_view key,
                                    std::uint32_t held_elsewhere = 0) {
    const std::uint64_t h = hash_key(key);
    return shard_for(h).decide(policy.index, h, clock_, held_elsewhere);
  }
  /// The synchronous core of async_inspect.
  limiter::KeyState inspect_now(PolicyId policy, std::string_view key) {
    const std::uint64_t h = hash_key(key);
    return shard_for(h).inspect(policy.index, h, clock_);
  }

  /// Forgets every key with nothing left in its window; returns how many. Call periodically
  /// (the gateway does, from a timer) so memory follows the active population.
  std::size_t sweep_idle();

  struct Stats {
    std::size_t tracked_keys = 0;
    std::uint64_t evicted_idle = 0;    ///< evictions that forgot nothing
    std::uint64_t evicted_active = 0;  ///< evictions remembered by the sketch
    std::size_t memory_bytes = 0;      ///< table and sketch arrays
  };
  [[nodiscard]] Stats stats() const;
  /// Decisions made through the store interface (`sluice_store_operations_total{store="memory",
  /// result="ok"}`: the memory store never fails).
  [[nodiscard]] std::uint64_t decisions() const noexcept;
  [[nodiscard]] std::size_t shard_count() const { return shards_.size(); }

 private:
  [[nodiscard]] std::uint64_t hash_key(std::string_view key) const {
    const std::uint64_t h = hash_(key);
    return h != 0 ? h : 1;  // 0 marks an empty table slot
  }
  KeyShard& shard_for(std::uint64_t h) const { return *shards_[h & shard_mask_]; }

  const core::Clock& clock_;
  const core::KeyedHash hash_;
  std::vector<std::unique_ptr<KeyShard>> shards_;
  std::uint64_t shard_mask_ = 0;

  void count_decision(StoreSlot slot) noexcept {
    counters_[slot.index % kCounterSlots].value.fetch_add(1, std::memory_order_relaxed);
  }
  /// Decision counters, one cache line per slot, so worker threads never share one.
  static constexpr std::size_t kCounterSlots = 64;
  struct alignas(64) Counter {
    std::atomic<std::uint64_t> value{0};
  };
  std::array<Counter, kCounterSlots> counters_{};
  std::atomic<std::uint32_t> next_slot_{0};
  core::TimePoint last_sweep_{};

  mutable std::mutex admin_mutex_;  // apply/remove/find only: never on the decision path
  std::map<std::string, std::uint32_t, std::less<>> ids_;
  std::vector<bool> live_;  // by policy index
};

}  // namespace sluice::store
