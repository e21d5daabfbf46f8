// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/space_saving.hpp"

#include <bit>
#include <cassert>

namespace sluice::insight {

SpaceSaving::SpaceSaving(std::size_t capacity)
    : capacity_(capacity),
      buckets_(capacity),
      slots_(std::bit_ceil(capacity * 2)),
      mask_(std::bit_ceil(capacity * 2) - 1) {
  assert(capacity > 0 && capacity < (std::size_t{1} << 30U));
  entries_.reserve(capacity);
  links_.reserve(capacity);
}

std::size_t SpaceSaving::home(std::uint64_t key) const noexcept {
  // Fibonacci hashing (Knuth, TAOCP vol. 3, 6.4): the keys are keyed hashes already, but tests
  // and other callers may count small integers; the top bits of the product spread both.
  return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ULL) >> 32U) & mask_;
}

std::size_t SpaceSaving::probe(std::uint64_t key) const noexcept {
  std::size_t i = home(key);
  while (slots_[i].pos != kNone && slots_[i].key != key) {
    i = (i + 1) & mask_;
  }
  return i;  // at most half the slots are taken: the loop ends
}

const SpaceSaving::Entry* SpaceSaving::find(std::uint64_t key) const noexcept {
  const Slot& slot = slots_[probe(key)];
  return slot.pos == kNone ? nullptr : &entries_[slot.pos];
}

void SpaceSaving::add(std::uint64_t key, bool limited) noexcept {
  ++total_;
  const std::uint32_t add_limited = limited ? 1U : 0U;
  std::size_t slot = probe(key);
  if (slots_[slot].pos != kNone) {
    const std::uint32_t e = slots_[slot].pos;
    entries_[e].limited += add_limited;
    increment(e);
    return;
  }
  if (entries_.size() < capacity_) {
    const auto e = static_cast<std::uint32_t>(entries_.size());
    slots_[slot] = {key, e};
    entries_.push_back({key, 1, 0, add_limited, static_cast<std::uint32_t>(slot)});
    links_.emplace_back();
    const bool ones = min_bucket_ != kNone && buckets_[min_bucket_].count == 1;
    attach(e, ones ? min_bucket_ : new_bucket(1, kNone));
    return;
  }
  // Every entry is taken: the key takes an entry of the smallest count over, inherits that
  // count as its error, and counts its own occurrence on top.
  const std::uint32_t e = buckets_[min_bucket_].first;
  const std::uint64_t min = entries_[e].count;
  erase_slot(entries_[e].slot);
  slot = probe(key);  // the erase may have shifted the key's probe chain
  slots_[slot] = {key, e};
  entries_[e] = {key, min, min, add_limited, static_cast<std::uint32_t>(slot)};
  increment(e);
}

void SpaceSaving::increment(std::uint32_t e) noexcept {
  const std::uint32_t b = links_[e].bucket;
  const std::uint64_t count = ++entries_[e].count;
  const std::uint32_t next = buckets_[b].next;
  const bool next_fits = next != kNone && buckets_[next].count == count;
  if (links_[e].prev == kNone && links_[e].next == kNone && !next_fits) {
    buckets_[b].count = count;  // alone in its bucket, and no bucket of the new count: in place
    return;
  }
  detach(e);
  attach(e, next_fits ? next : new_bucket(count, b));
  if (buckets_[b].first == kNone) {
    free_bucket(b);
  }
}

void SpaceSaving::attach(std::uint32_t e, std::uint32_t bucket) noexcept {
  const std::uint32_t first = buckets_[bucket].first;
  links_[e] = {bucket, kNone, first};
  if (first != kNone) {
    links_[first].prev = e;
  }
  buckets_[bucket].first = e;
}

void SpaceSaving::detach(std::uint32_t e) noexcept {
  const Link link = links_[e];
  if (link.prev != kNone) {
    links_[link.prev].next = link.next;
  } else {
    buckets_[link.bucket].first = link.next;
  }
  if (link.next != kNone) {
    links_[link.next].prev = link.prev;
  }
}

std::uint32_t SpaceSaving::new_bucket(std::uint64_t count, std::uint32_t before) noexcept {
  std::uint32_t b = free_buckets_;
  if (b != kNone) {
    free_buckets_ = buckets_[b].next;
  } else {
    b = buckets_used_++;  // at most one bucket per entry: within capacity_
  }
  const std::uint32_t after = before == kNone ? min_bucket_ : buckets_[before].next;
  buckets_[b] = {count, kNone, before, after};
  if (after != kNone) {
    buckets_[after].prev = b;
  }
  if (before != kNone) {
    buckets_[before].next = b;
  } else {
    min_bucket_ = b;
  }
  return b;
}

void SpaceSaving::free_bucket(std::uint32_t bucket) noexcept {
  const Bucket dead = buckets_[bucket];
  if (dead.prev != kNone) {
    buckets_[dead.prev].next = dead.next;
  } else {
    min_bucket_ = dead.next;
  }
  if (dead.next != kNone) {
    buckets_[dead.next].prev = dead.prev;
  }
  buckets_[bucket].next = free_buckets_;
  free_buckets_ = bucket;
}

void SpaceSaving::clear() noexcept {
  for (const Entry& e : entries_) {
    slots_[e.slot].pos = kNone;
  }
  entries_.clear();
  links_.clear();
  buckets_used_ = 0;
  free_buckets_ = kNone;
  min_bucket_ = kNone;
  total_ = 0;
}

// Linear probing's deletion without tombstones (Knuth, TAOCP vol. 3, 6.4, Algorithm R): every
// later slot of the run whose home is not between the hole and it moves back into the hole.
void SpaceSaving::erase_slot(std::size_t slot) noexcept {
  std::size_t hole = slot;
  slots_[hole].pos = kNone;
  for (std::size_t j = (hole + 1) & mask_; slots_[j].pos != kNone; j = (j + 1) & mask_) {
    const std::size_t h = home(slots_[j].key);
    const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (stays) {
      continue;
    }
    slots_[hole] = slots_[j];
    entries_[slots_[hole].pos].slot = static_cast<std::uint32_t>(hole);
    slots_[j].pos = kNone;
    hole = j;
  }
}

}  // namespace sluice::insight
