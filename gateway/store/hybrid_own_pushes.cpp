// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/hybrid_own_pushes.hpp"

#include <algorithm>

namespace sluice::store {

void HybridOwnPushes::add(const JournalKey& key, std::int64_t bucket_start, std::uint32_t count,
                          std::int64_t live_from) {
  if (count == 0) {
    return;
  }
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  std::vector<Push>& pushes = shard.keys[key].pushes;
  std::erase_if(pushes, [&](const Push& p) { return p.bucket_start < live_from; });
  const auto it = std::find_if(pushes.begin(), pushes.end(),
                               [&](const Push& p) { return p.bucket_start == bucket_start; });
  if (it != pushes.end()) {
    it->count += count;
  } else {
    pushes.push_back({bucket_start, count});
  }
}

std::uint64_t HybridOwnPushes::live(const JournalKey& key, std::int64_t live_from) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  const auto it = shard.keys.find(key);
  if (it == shard.keys.end()) {
    return 0;
  }
  std::uint64_t sum = 0;
  for (const Push& p : it->second.pushes) {
    if (p.bucket_start >= live_from) {
      sum += p.count;
    }
  }
  return sum;
}

bool HybridOwnPushes::needs_expiry(const JournalKey& key, std::int64_t now_ms,
                                   std::int64_t window_ms) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  const auto it = shard.keys.find(key);
  return it == shard.keys.end() || it->second.expiry_set < now_ms - window_ms;
}

void HybridOwnPushes::expiry_set(const JournalKey& key, std::int64_t at_ms) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  Entry& entry = shard.keys[key];
  entry.expiry_set = std::max(entry.expiry_set, at_ms);
}

std::size_t HybridOwnPushes::forget(std::size_t shard_index, std::int64_t older_than) {
  Shard& shard = shards_[shard_index % kShards];
  const std::lock_guard lock(shard.mutex);
  return boost::unordered::erase_if(shard.keys, [&](auto& kv) {
    Entry& entry = kv.second;
    std::erase_if(entry.pushes, [&](const Push& p) { return p.bucket_start < older_than; });
    return entry.pushes.empty() && entry.expiry_set < older_than;
  });
}

std::size_t HybridOwnPushes::size() {
  std::size_t n = 0;
  for (Shard& shard : shards_) {
    const std::lock_guard lock(shard.mutex);
    n += shard.keys.size();
  }
  return n;
}

}  // namespace sluice::store
