// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/hybrid_key_ledger.hpp"

#include <algorithm>
#include <limits>

namespace sluice::store {

std::vector<HybridKeyLedger::Counts::Bucket>::iterator HybridKeyLedger::Counts::at_or_after(
    std::int64_t start) {
  if (buckets_.empty() || buckets_.back().start < start) {
    return buckets_.end();  // the usual case: a bucket newer than all known
  }
  return std::lower_bound(buckets_.begin(), buckets_.end(), start,
                          [](const Bucket& b, std::int64_t s) { return b.start < s; });
}

void HybridKeyLedger::Counts::add(std::int64_t start, std::uint32_t count) {
  total_ += count;
  const auto it = at_or_after(start);
  if (it != buckets_.end() && it->start == start) {
    it->count += count;
  } else {
    buckets_.insert(it, {start, count});
  }
}

void HybridKeyLedger::Counts::raise(std::int64_t start, std::uint32_t count) {
  const auto it = at_or_after(start);
  if (it != buckets_.end() && it->start == start) {
    if (count > it->count) {
      total_ += count - it->count;
      it->count = count;
    }
  } else if (count > 0) {
    buckets_.insert(it, {start, count});
    total_ += count;
  }
}

std::uint64_t HybridKeyLedger::Counts::sum_before(std::int64_t until) const {
  std::uint64_t sum = 0;
  for (auto it = buckets_.begin(); it != buckets_.end() && it->start < until; ++it) {
    sum += it->count;
  }
  return sum;
}

std::uint64_t HybridKeyLedger::Counts::sum_since(std::int64_t from) const {
  std::uint64_t sum = 0;
  for (auto it = buckets_.rbegin(); it != buckets_.rend() && it->start >= from; ++it) {
    sum += it->count;
  }
  return sum;
}

std::uint64_t HybridKeyLedger::Counts::sum_between(std::int64_t from, std::int64_t until) const {
  // What is neither before nor since: both walks are short, the front's over buckets about to
  // leave, the back's over the ones newer than `until`.
  return until <= from ? 0 : total_ - sum_before(from) - sum_since(until);
}

std::uint64_t HybridKeyLedger::Counts::sum_from(std::int64_t from) const {
  return total_ - sum_before(from);
}

std::size_t HybridKeyLedger::Counts::count_before(std::int64_t until) const {
  std::size_t n = 0;
  while (n < buckets_.size() && buckets_[n].start < until) {
    ++n;
  }
  return n;
}

void HybridKeyLedger::Counts::drop_before(std::int64_t until, std::vector<std::int64_t>* dropped) {
  const std::size_t n = count_before(until);
  if (n == 0) {
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    total_ -= buckets_[i].count;
    if (dropped != nullptr) {
      dropped->push_back(buckets_[i].start);
    }
  }
  buckets_.erase(buckets_.begin(), buckets_.begin() + static_cast<std::ptrdiff_t>(n));
}

void HybridKeyLedger::Counts::clear() noexcept {
  buckets_.clear();
  total_ = 0;
}

void HybridKeyLedger::add_to(Entry& entry, std::int64_t bucket_start, std::uint32_t count,
                             std::int64_t live_from) {
  entry.pushes.drop_before(live_from);
  entry.pushes.add(bucket_start, count);
}

std::uint64_t HybridKeyLedger::live_in(const Entry& entry, std::int64_t live_from) {
  return entry.pushes.sum_from(live_from);
}

HybridKeyLedger::ReadPlan HybridKeyLedger::plan_for(const Entry& entry, const HybridShape& shape,
                                                    std::int64_t bucket, std::size_t max_fields,
                                                    std::int64_t settled_before) {
  const std::int64_t width = std::max<std::int64_t>(shape.width_ms, 1);
  if (entry.settled_width != width || entry.settled_until < shape.live_from(bucket) ||
      entry.settled_until > bucket) {
    return {};
  }
  // Held buckets are read again only once one of them has settled (that read is final); until
  // then the read starts after them, often at the current bucket.
  std::int64_t from = entry.settled_until;
  if (settled_before <= entry.settled_until) {
    from = std::clamp(entry.held_until, entry.settled_until, bucket);
  }
  const auto fields = static_cast<std::size_t>((bucket - from) / width + 1);
  if (fields > max_fields) {
    return {};
  }
  return {.whole = false, .from = from, .fields = fields};
}

std::uint64_t HybridKeyLedger::absorb_whole_into(Entry& entry, const HybridShape& shape,
                                                 const std::vector<FleetBucket>& live,
                                                 std::int64_t live_from,
                                                 std::int64_t settled_before,
                                                 std::int64_t held_before) {
  const std::int64_t width = std::max<std::int64_t>(shape.width_ms, 1);
  if (entry.settled_width != width) {
    // Nothing known under this width (a first read, a re-tune): the read replaces it.
    entry.known.clear();
    entry.settled_until = std::numeric_limits<std::int64_t>::min();
    entry.held_until = entry.settled_until;
    entry.settled_width = width;
  } else {
    // Known buckets that left the window are among the read's dead fields (deleted with it).
    entry.known.drop_before(live_from);
  }
  // Another thread's read, planned later, may have landed first: the marks only move on, and
  // a count read again keeps the larger (the fleet's counts only grow), so a late whole read
  // neither lowers a count nor makes the next exchange read again what is held.
  const std::int64_t keep_before = std::max(settled_before, held_before);
  for (const FleetBucket& b : live) {
    if (b.start < keep_before) {
      entry.known.raise(b.start, static_cast<std::uint32_t>(b.count));  // (any order)
    }
  }
  entry.settled_until = std::max(entry.settled_until, settled_before);
  entry.held_until = std::max({entry.held_until, keep_before, entry.settled_until});
  // The known buckets count as kept, the read's after them as read.
  std::uint64_t total = entry.known.sum_from(live_from);
  for (const FleetBucket& b : live) {
    if (b.start >= entry.held_until) {
      total += b.count;
    }
  }
  return total;
}

std::uint64_t HybridKeyLedger::absorb_part_into(Entry& entry, const HybridShape& shape,
                                                const ReadPlan& plan,
                                                std::span<const std::uint64_t> counts,
                                                std::int64_t live_from, std::int64_t settled_before,
                                                std::int64_t held_before,
                                                std::vector<std::int64_t>& dead) {
  const std::int64_t width = std::max<std::int64_t>(shape.width_ms, 1);
  // Buckets that left the window are fields to delete, kDeadPerDelete of them at a time: one
  // HDEL per bucket would be a command per bucket width for every busy key. The known live
  // buckets before the read part count (another thread may have settled more meanwhile: those
  // from `plan.from` on are read).
  std::uint64_t total = entry.known.sum_between(live_from, plan.from);
  if (entry.known.count_before(live_from) >= kDeadPerDelete) {
    entry.known.drop_before(live_from, &dead);
  }
  const std::int64_t keep_before = std::max(settled_before, held_before);
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const std::int64_t start = plan.from + static_cast<std::int64_t>(i) * width;
    if (start < live_from) {
      continue;
    }
    total += counts[i];
    if (start < keep_before) {
      entry.known.raise(start, static_cast<std::uint32_t>(counts[i]));
    }
  }
  // The read runs on from plan.from: it settles (or holds) what it covers when nothing before it
  // is missing (another thread may have moved the marks on meanwhile; they only move on).
  if (entry.settled_width == width) {
    const std::int64_t held_until = std::max(entry.held_until, entry.settled_until);
    if (plan.from <= entry.settled_until) {
      entry.settled_until = std::max(entry.settled_until, settled_before);
    }
    if (plan.from <= held_until) {
      entry.held_until = std::max(held_until, keep_before);
    }
    entry.held_until = std::max(entry.held_until, entry.settled_until);
  }
  return total;
}

void HybridKeyLedger::add(const JournalKey& key, std::int64_t bucket_start, std::uint32_t count,
                          std::int64_t live_from) {
  if (count == 0) {
    return;
  }
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  add_to(shard.keys[key], bucket_start, count, live_from);
}

std::uint64_t HybridKeyLedger::live(const JournalKey& key, std::int64_t live_from) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  const auto it = shard.keys.find(key);
  return it != shard.keys.end() ? live_in(it->second, live_from) : 0;
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
                                                     std::size_t max_fields,
                                                     std::int64_t settled_before) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  const auto it = shard.keys.find(key);
  return it != shard.keys.end() ? plan_for(it->second, shape, bucket, max_fields, settled_before)
                                : ReadPlan{};
}

HybridKeyLedger::ExchangePlan HybridKeyLedger::plan_exchange(
    const JournalKey& key, const HybridShape& shape, std::int64_t bucket, std::int64_t now_ms,
    bool pushing, std::size_t max_fields, std::int64_t settled_before) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  const auto it = shard.keys.find(key);
  if (it == shard.keys.end()) {
    return {.set_expiry = pushing, .read = {}};
  }
  return {.set_expiry = pushing && it->second.expiry_set < now_ms - shape.window_ms(),
          .read = plan_for(it->second, shape, bucket, max_fields, settled_before)};
}

std::uint64_t HybridKeyLedger::absorb_whole(const JournalKey& key, const HybridShape& shape,
                                            const std::vector<FleetBucket>& live,
                                            std::int64_t live_from, std::int64_t settled_before,
                                            std::int64_t held_before) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  return absorb_whole_into(shard.keys[key], shape, live, live_from, settled_before, held_before);
}

std::uint64_t HybridKeyLedger::absorb_part(const JournalKey& key, const HybridShape& shape,
                                           const ReadPlan& plan,
                                           std::span<const std::uint64_t> counts,
                                           std::int64_t live_from, std::int64_t settled_before,
                                           std::vector<std::int64_t>& dead,
                                           std::int64_t held_before) {
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  return absorb_part_into(shard.keys[key], shape, plan, counts, live_from, settled_before,
                          held_before, dead);
}

HybridKeyLedger::Settled HybridKeyLedger::settle(const JournalKey& key, const HybridShape& shape,
                                                 const Answer& answer,
                                                 std::vector<std::int64_t>& dead) {
  const bool read = answer.whole != nullptr || answer.part.has_value();
  Shard& shard = shard_of(key);
  const std::lock_guard lock(shard.mutex);
  if (answer.pushed == 0 && !read && !answer.expiry_set_at) {
    return {};  // nothing acknowledged and nothing read: nothing to note
  }
  Entry& entry = shard.keys[key];
  if (answer.expiry_set_at) {
    entry.expiry_set = std::max(entry.expiry_set, *answer.expiry_set_at);
  }
  if (answer.pushed > 0) {
    add_to(entry, answer.bucket, answer.pushed, answer.live_from);
  }
  Settled settled;
  if (answer.whole != nullptr) {
    settled.fleet = absorb_whole_into(entry, shape, *answer.whole, answer.live_from,
                                      answer.settled_before, answer.held_before);
  } else if (answer.part) {
    settled.fleet = absorb_part_into(entry, shape, answer.plan, *answer.part, answer.live_from,
                                     answer.settled_before, answer.held_before, dead);
  }
  settled.own = live_in(entry, answer.live_from);
  return settled;
}

std::size_t HybridKeyLedger::forget(std::size_t shard_index, std::int64_t older_than) {
  Shard& shard = shards_[shard_index % kShards];
  const std::lock_guard lock(shard.mutex);
  return boost::unordered::erase_if(shard.keys, [&](auto& kv) {
    Entry& entry = kv.second;
    entry.pushes.drop_before(older_than);
    // Known buckets are not trimmed here: the ones that left the window are fields that the
    // key's next exchange deletes (absorb_part). A key forgotten whole is read whole when it
    // comes back (HGETALL), which finds its dead fields again; an idle one's hash expires.
    return entry.pushes.empty() && entry.known.all_before(older_than) &&
           entry.expiry_set < older_than &&
           std::max(entry.settled_until, entry.held_until) < older_than;
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
