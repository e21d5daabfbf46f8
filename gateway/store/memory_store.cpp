// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/memory_store.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace sluice::store {
namespace {

constexpr std::size_t kMaxShards = 128;
constexpr std::size_t kMinKeysPerShard = 64;

std::size_t shard_count_for(const MemoryStore::Options& options) {
  if (options.max_keys == 0) {
    throw std::invalid_argument("memory store: max_keys must be at least 1");
  }
  std::size_t shards = options.shards;
  if (shards == 0) {
    shards = std::bit_floor(
        std::clamp<std::uint64_t>(options.max_keys / kMinKeysPerShard, 1, kMaxShards));
  }
  if (!std::has_single_bit(shards)) {
    throw std::invalid_argument("memory store: shard count must be a power of two");
  }
  // Every shard needs a share of at least one key.
  return std::min<std::size_t>(shards, std::bit_floor(options.max_keys));
}

}  // namespace

MemoryStore::MemoryStore(const core::Clock& clock, Options options, core::KeyedHash hash)
    : clock_(clock), hash_(hash), last_sweep_(clock.now()) {
  const std::size_t count = shard_count_for(options);
  shards_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    // Split the cap exactly: the first (max_keys % count) shards take one key more.
    const std::uint64_t share = options.max_keys / count + (i < options.max_keys % count ? 1 : 0);
    shards_.push_back(std::make_unique<KeyShard>(share));
  }
  shard_mask_ = count - 1;
}

PolicyId MemoryStore::apply(const limiter::Policy& policy) {
  SlotParams params{.requests = policy.requests,
                    .shape = {.buckets = policy.buckets, .width = policy.bucket_width()},
                    .overrides = nullptr};
  if (policy.buckets == 0 || params.shape.width <= core::Duration::zero()) {
    throw std::invalid_argument("memory store: policy '" + policy.name + "' has no buckets");
  }
  if (!policy.overrides.empty()) {
    auto overrides = std::make_shared<OverrideMap>();
    for (const auto& [key, requests] : policy.overrides) {
      overrides->insert_or_assign(hash_key(key), requests);
    }
    params.overrides = std::move(overrides);
  }
  std::lock_guard lock(admin_mutex_);
  auto [it, inserted] = ids_.try_emplace(policy.name, static_cast<std::uint32_t>(ids_.size()));
  const std::uint32_t index = it->second;
  if (inserted) {
    live_.push_back(true);
  }
  live_[index] = true;
  for (auto& shard : shards_) {
    shard->configure(index, params, clock_);
  }
  return PolicyId{index};
}

bool MemoryStore::remove(std::string_view name) {
  std::lock_guard lock(admin_mutex_);
  const auto it = ids_.find(name);
  if (it == ids_.end() || !live_[it->second]) {
    return false;
  }
  live_[it->second] = false;
  for (auto& shard : shards_) {
    shard->remove(it->second);
  }
  return true;
}

std::optional<PolicyId> MemoryStore::find(std::string_view name) const {
  std::lock_guard lock(admin_mutex_);
  const auto it = ids_.find(name);
  if (it == ids_.end() || !live_[it->second]) {
    return std::nullopt;
  }
  return PolicyId{it->second};
}

StoreSlot MemoryStore::attach(boost::asio::io_context& /*ioc*/) {
  return StoreSlot{next_slot_.fetch_add(1, std::memory_order_relaxed)};
}

void MemoryStore::tick(StoreSlot /*slot*/) {
  const core::TimePoint now = clock_.now();
  if (now - last_sweep_ >= kSweepEvery) {
    last_sweep_ = now;
    sweep_idle();
  }
}

std::uint64_t MemoryStore::decisions() const noexcept {
  std::uint64_t total = 0;
  for (const Counter& c : counters_) {
    total += c.value.load(std::memory_order_relaxed);
  }
  return total;
}

void MemoryStore::async_decide(StoreSlot slot, PolicyId policy, std::string_view key,
                               DecisionCompletion completion) {
  count_decision(slot);
  std::move(completion).post(decide_now(policy, key));
}

void MemoryStore::async_inspect(StoreSlot /*slot*/, PolicyId policy, std::string_view key,
                                InspectCompletion completion) {
  std::move(completion).post(inspect_now(policy, key));
}

std::size_t MemoryStore::tracked_keys(PolicyId policy) const {
  std::size_t total = 0;
  for (const auto& shard : shards_) {
    total += shard->tracked(policy.index);
  }
  return total;
}

std::size_t MemoryStore::sweep_idle() {
  std::size_t dropped = 0;
  for (auto& shard : shards_) {
    dropped += shard->sweep(clock_);
  }
  return dropped;
}

MemoryStore::Stats MemoryStore::stats() const {
  Stats total;
  for (const auto& shard : shards_) {
    const ShardStats s = shard->stats();
    total.tracked_keys += s.tracked_keys;
    total.evicted_idle += s.evicted_idle;
    total.evicted_active += s.evicted_active;
    total.memory_bytes += s.memory_bytes;
  }
  return total;
}

}  // namespace sluice::store
