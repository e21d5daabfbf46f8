// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/hybrid_key_ledger.hpp"

#include <algorithm>

namespace sluice::store {

void HybridKeyLedger::add(const JournalKey& key, std::int64_t bucket_start, std::uint32_t count,
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

std::uint64_t HybridKeyLedger::live(const JournalKey& key, std::int64_t live_from) {
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

bool HybridKeyLedger::needs_expiry(const JournalKey& key, std::int64_t now_ms,
                                   std::int64_t window_ms) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  const auto it = shard.keys.find(key);
  return it == shard.keys.end() || it->second.expiry_set < now_ms - window_ms;
}

void HybridKeyLedger::expiry_set(const JournalKey& key, std::int64_t at_ms) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  Entry& entry = shard.keys[key];
  entry.expiry_set = std::max(entry.expiry_set, at_ms);
}

HybridKeyLedger::ReadPlan HybridKeyLedger::plan_read(const JournalKey& key,
                                                     const HybridShape& shape, std::int64_t bucket,
                                                     std::size_t max_fields) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  const auto it = shard.keys.find(key);
  const std::int64_t width = std::max<std::int64_t>(shape.width_ms, 1);
  if (it == shard.keys.end() || it->second.settled_width != width ||
      it->second.settled_until < shape.live_from(bucket) || it->second.settled_until > bucket) {
    return {};
  }
  const auto fields = static_cast<std::size_t>((bucket - it->second.settled_until) / width + 1);
  if (fields > max_fields) {
    return {};
  }
  return {.whole = false, .from = it->second.settled_until, .fields = fields};
}

std::uint64_t HybridKeyLedger::absorb_whole(const JournalKey& key, const HybridShape& shape,
                                            const std::vector<FleetBucket>& live,
                                            std::int64_t settled_before) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  Entry& entry = shard.keys[key];
  entry.settled.clear();
  std::uint64_t total = 0;
  for (const FleetBucket& b : live) {
    total += b.count;
    if (b.start < settled_before) {
      entry.settled.push_back({b.start, static_cast<std::uint32_t>(b.count)});
    }
  }
  entry.settled_until = settled_before;
  entry.settled_width = std::max<std::int64_t>(shape.width_ms, 1);
  return total;
}

std::uint64_t HybridKeyLedger::absorb_part(const JournalKey& key, const HybridShape& shape,
                                           const ReadPlan& plan,
                                           std::span<const std::uint64_t> counts,
                                           std::int64_t live_from, std::int64_t settled_before,
                                           std::vector<std::int64_t>& dead) {
  const std::int64_t width = std::max<std::int64_t>(shape.width_ms, 1);
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  Entry& entry = shard.keys[key];
  // Buckets that left the window are fields to delete, kDeadPerDelete of them at a time: one
  // HDEL per bucket would be a command per bucket width for every busy key.
  const auto gone = static_cast<std::size_t>(
      std::count_if(entry.settled.begin(), entry.settled.end(),
                    [&](const Push& p) { return p.bucket_start < live_from; }));
  if (gone >= kDeadPerDelete) {
    std::erase_if(entry.settled, [&](const Push& p) {
      if (p.bucket_start < live_from) {
        dead.push_back(p.bucket_start);
        return true;
      }
      return false;
    });
  }
  std::uint64_t total = 0;
  for (const Push& p : entry.settled) {
    // (Another thread may have settled more meanwhile: those after `plan.from` are read.)
    if (p.bucket_start >= live_from && p.bucket_start < plan.from) {
      total += p.count;
    }
  }
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const std::int64_t start = plan.from + static_cast<std::int64_t>(i) * width;
    if (start < live_from) {
      continue;
    }
    total += counts[i];
    const bool known = std::any_of(entry.settled.begin(), entry.settled.end(),
                                   [&](const Push& p) { return p.bucket_start == start; });
    if (start < settled_before && counts[i] > 0 && !known) {
      entry.settled.push_back({start, static_cast<std::uint32_t>(counts[i])});
    }
  }
  if (entry.settled_width == width && entry.settled_until == plan.from) {
    entry.settled_until = std::max(entry.settled_until, settled_before);
  }
  return total;
}

std::size_t HybridKeyLedger::forget(std::size_t shard_index, std::int64_t older_than) {
  Shard& shard = shards_[shard_index % kShards];
  const std::lock_guard lock(shard.mutex);
  return boost::unordered::erase_if(shard.keys, [&](auto& kv) {
    Entry& entry = kv.second;
    std::erase_if(entry.pushes, [&](const Push& p) { return p.bucket_start < older_than; });
    // Settled buckets are not trimmed here: the ones that left the window are fields that the
    // key's next exchange deletes (absorb_part). A key forgotten whole is read whole when it
    // comes back (HGETALL), which finds its dead fields again; an idle one's hash expires.
    const bool settled_old =
        std::all_of(entry.settled.begin(), entry.settled.end(),
                    [&](const Push& p) { return p.bucket_start < older_than; });
    return entry.pushes.empty() && settled_old && entry.expiry_set < older_than &&
           entry.settled_until < older_than;
  });
}

std::size_t HybridKeyLedger::size() {
  std::size_t n = 0;
  for (Shard& shard : shards_) {
    const std::lock_guard lock(shard.mutex);
    n += shard.keys.size();
  }
  return n;
}

}  // namespace sluice::store
