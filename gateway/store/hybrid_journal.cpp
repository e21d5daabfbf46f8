// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/hybrid_journal.hpp"

namespace sluice::store {

std::uint32_t HybridJournal::others(const JournalKey& key) const {
  const auto it = entries_.find(key);
  return it != entries_.end() ? it->second.others : 0;
}

std::uint32_t HybridJournal::Decision::others() const noexcept {
  return entry_->others;
}

void HybridJournal::Decision::admit(std::uint32_t admitted) noexcept {
  entry_->pending += admitted;
}

HybridJournal::Decision HybridJournal::decide(const JournalKey& key, core::TimePoint now) {
  Entry& entry = entries_[key];
  entry.last_seen = now;
  if (!entry.queued) {
    // Queued even when denied: the next sync refreshes what the others hold.
    entry.queued = true;
    queue_.push_back(key);
  }
  return Decision(entry);
}

void HybridJournal::note(const JournalKey& key, std::uint32_t admitted, core::TimePoint now) {
  decide(key, now).admit(admitted);
}

std::vector<SyncItem> HybridJournal::take_batch(std::size_t max) {
  std::vector<SyncItem> batch;
  std::vector<JournalKey> deferred;  // in flight still: they keep their place in the queue
  std::size_t i = 0;
  for (; i < queue_.size() && batch.size() < max; ++i) {
    const auto it = entries_.find(queue_[i]);
    if (it == entries_.end()) {
      continue;
    }
    Entry& entry = it->second;
    if (entry.flying) {
      deferred.push_back(queue_[i]);
      continue;
    }
    entry.queued = false;
    entry.flying = true;
    entry.in_flight = entry.pending;
    entry.pending = 0;
    batch.push_back({queue_[i], entry.in_flight});
  }
  // What is left: the deferred keys, then the ones the cap did not reach, in order.
  std::vector<JournalKey> rest = std::move(deferred);
  rest.insert(rest.end(), queue_.begin() + static_cast<std::ptrdiff_t>(i), queue_.end());
  queue_ = std::move(rest);
  return batch;
}

void HybridJournal::complete(const SyncItem& item, std::optional<std::uint32_t> others,
                             bool resend) {
  const auto it = entries_.find(item.key);
  if (it == entries_.end()) {
    return;
  }
  Entry& entry = it->second;
  entry.flying = false;
  if (others) {
    entry.others = *others;
  } else {
    if (resend) {
      entry.pending += entry.in_flight;  // pushed again with the next batch
    }
    if (!entry.queued) {
      entry.queued = true;
      queue_.push_back(item.key);
    }
  }
  entry.in_flight = 0;
}

std::size_t HybridJournal::forget_idle(core::TimePoint now, core::Duration keep_for) {
  return boost::unordered::erase_if(entries_, [&](const auto& kv) {
    const Entry& e = kv.second;
    return !e.queued && !e.flying && e.pending == 0 && now - e.last_seen > keep_for;
  });
}

std::uint64_t HybridJournal::unpushed() const {
  std::uint64_t sum = 0;
  for (const auto& [key, entry] : entries_) {
    sum += entry.pending + entry.in_flight;
  }
  return sum;
}

}  // namespace sluice::store
