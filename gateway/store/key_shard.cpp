// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/key_shard.hpp"

#include <algorithm>
#include <cassert>
#include <limits>

namespace sluice::store {
namespace {

/// Occupied entries examined per eviction (Redis's approximated LRU samples 5; idle keys are
/// what we most want to find, so look a little further).
constexpr std::size_t kEvictionSamples = 32;

std::uint32_t limit_for(const SlotParams& params, std::uint64_t key) {
  if (params.overrides) {
    if (const auto it = params.overrides->find(key); it != params.overrides->end()) {
      return it->second;
    }
  }
  return params.requests;
}

}  // namespace

KeyShard::Slot* KeyShard::active_slot(std::uint32_t slot) {
  if (slot >= slots_.size() || !slots_[slot].active) {
    return nullptr;
  }
  return &slots_[slot];
}

limiter::LimitDecision KeyShard::decide(std::uint32_t slot, std::uint64_t key,
                                        const core::Clock& clock, std::uint32_t held_elsewhere) {
  std::lock_guard lock(mutex_);
  Slot* s = active_slot(slot);
  if (s == nullptr) {
    limiter::LimitDecision admit;
    admit.allowed = true;
    return admit;
  }
  // With a million keys the key and its record are two cache misses: start both now, and
  // read the clock (under the lock, so decisions on a key are ordered in time) meanwhile.
  s->records.prefetch(key);
  const core::TimePoint now = clock.now();
  const std::uint32_t limit = limit_for(s->params, key);
  std::byte* record = s->records.find(key);
  if (record == nullptr) {
    record = track_new_key(*s, key, now);
  }
  if (held_elsewhere == 0) {
    return limiter::decide(s->records.ring(record), limit, now);
  }
  // Admitted iff own + elsewhere < limit; `remaining` follows from the reduced limit as well.
  limiter::LimitDecision d = limiter::decide(
      s->records.ring(record), limit > held_elsewhere ? limit - held_elsewhere : 0, now);
  d.limit = limit;
  return d;
}

limiter::KeyState KeyShard::inspect(std::uint32_t slot, std::uint64_t key,
                                    const core::Clock& clock) {
  std::lock_guard lock(mutex_);
  const core::TimePoint now = clock.now();
  Slot* s = active_slot(slot);
  if (s == nullptr) {
    return {};
  }
  const std::uint32_t limit = limit_for(s->params, key);
  if (std::byte* record = s->records.find(key); record != nullptr) {
    return limiter::inspect(s->records.ring(record), limit, now);
  }
  // Untracked: the next decision starts from an empty ring, or from what the sketch remembers.
  KeyRingState scratch{};
  limiter::SparseCountRing ring(scratch, s->params.shape.buckets, s->params.shape.width);
  ring.reset(now);
  if (s->sketch) {
    s->sketch->seed(key, ring, now);
  }
  const limiter::KeyState state = limiter::inspect(ring, limit, now);
  ring.release();
  return state;
}

std::byte* KeyShard::track_new_key(Slot& slot, std::uint64_t key, core::TimePoint now) {
  if (size_ >= max_keys_) {
    evict_one(now);
  }
  std::byte* record = slot.records.insert(key);
  ++size_;
  auto ring = slot.records.ring(record);
  ring.reset(now);
  if (slot.sketch) {
    slot.sketch->seed(key, ring, now);
  }
  return record;
}

void KeyShard::evict_one(core::TimePoint now) {
  sweep_due(now);
  if (size_ < max_keys_) {
    return;  // idle keys made room
  }
  // The cap is shared by every policy in the shard: the victim is the best candidate of any
  // slot's sample (idle first, then least recently active).
  Slot* from = nullptr;
  std::size_t victim = 0;
  bool victim_idle = false;
  core::TimePoint victim_start{};
  for (Slot& s : slots_) {
    if (!s.active || s.records.size() == 0) {
      continue;
    }
    const std::size_t candidate = pick_victim(s, now);
    const KeyRingState& state = key_ring_state_of(s.records.record_at(candidate));
    const bool idle = is_idle(state, s.params.shape, now);
    const core::TimePoint start = head_start(state, s.params.shape);
    if (from == nullptr || (idle && !victim_idle) ||
        (idle == victim_idle && start < victim_start)) {
      from = &s;
      victim = candidate;
      victim_idle = idle;
      victim_start = start;
    }
  }
  assert(from != nullptr);
  if (victim_idle) {
    ++evicted_idle_;
  } else {
    remember(*from, victim, now);
    ++evicted_active_;
  }
  from->records.erase_slot(victim);
  --size_;
}

void KeyShard::remember(Slot& slot, std::size_t victim, core::TimePoint now) {
  if (!slot.sketch) {
    // As many rings as the shard has keys: a key shares its ring with about one evicted key
    // per cap's worth of overflow, so modest overflow rarely limits anyone early.
    const std::size_t rings = std::max<std::size_t>(16, max_keys_);
    slot.sketch = std::make_unique<EvictionSketch>(rings, slot.params.shape);
  }
  slot.sketch->remember(slot.records.key_at(victim),
                        slot.records.ring(slot.records.record_at(victim)), now);
}

void KeyShard::sweep_due(core::TimePoint now) {
  for (Slot& s : slots_) {
    if (s.active && s.next_sweep <= now) {
      evicted_idle_ += sweep_slot(s, now);
    }
  }
}

std::size_t KeyShard::sweep_slot(Slot& slot, core::TimePoint now) {
  const RingShape& shape = slot.params.shape;
  const std::size_t dropped = slot.records.erase_if([&](std::uint64_t, std::byte* record) {
    return is_idle(key_ring_state_of(record), shape, now);
  });
  size_ -= dropped;
  if (slot.sketch && slot.sketch->is_idle(now)) {
    slot.sketch.reset();
  }
  // Records turn idle only when a bucket boundary passes: until the next one, a new sweep
  // could find nothing (but keys created empty, which sampling still finds).
  const auto since_epoch = now.time_since_epoch();
  slot.next_sweep = core::TimePoint(since_epoch - since_epoch % shape.width + shape.width);
  return dropped;
}

std::size_t KeyShard::pick_victim(Slot& slot, core::TimePoint now) {
  KeyRecords& table = slot.records;
  const std::size_t capacity = table.capacity();
  std::size_t best = capacity;
  std::int64_t best_head = std::numeric_limits<std::int64_t>::max();
  std::size_t seen = 0;
  for (std::size_t step = 0; step < capacity && seen < kEvictionSamples; ++step) {
    const std::size_t i = slot.cursor % capacity;
    slot.cursor = i + 1;
    if (table.key_at(i) == 0) {
      continue;
    }
    ++seen;
    const KeyRingState& state = key_ring_state_of(table.record_at(i));
    if (is_idle(state, slot.params.shape, now)) {
      return i;
    }
    if (state.head < best_head) {  // one slot, one width: bucket numbers order like times
      best_head = state.head;
      best = i;
    }
  }
  return best;
}

void KeyShard::configure(std::uint32_t slot, const SlotParams& params, const core::Clock& clock) {
  std::lock_guard lock(mutex_);
  const core::TimePoint now = clock.now();
  if (slot >= slots_.size()) {
    slots_.resize(slot + 1);
  }
  Slot& s = slots_[slot];
  if (!s.active) {
    s.records = KeyRecords(params.shape, std::max<std::size_t>(max_keys_, 1));
    s.active = true;
  } else if (s.params.shape != params.shape) {
    reshape(s, params.shape, now);
  }
  s.params = params;
}

void KeyShard::reshape(Slot& slot, const RingShape& shape, core::TimePoint now) {
  KeyRecords fresh(shape, std::max<std::size_t>(max_keys_, 1));
  KeyRecords& old = slot.records;
  for (std::size_t i = 0; i < old.capacity(); ++i) {
    if (old.key_at(i) == 0) {
      continue;
    }
    std::byte* record = old.record_at(i);
    if (is_idle(key_ring_state_of(record), slot.params.shape, now)) {
      --size_;  // carries nothing: no need to keep it
      continue;
    }
    carry_over(fresh.ring(fresh.insert(old.key_at(i))), old.ring(record), now);
  }
  slot.records = std::move(fresh);
  slot.cursor = 0;
  slot.next_sweep = core::TimePoint{};  // the old width's schedule means nothing now
  if (slot.sketch) {
    slot.sketch->reshape(shape, now);
  }
}

void KeyShard::remove(std::uint32_t slot) {
  std::lock_guard lock(mutex_);
  if (slot >= slots_.size() || !slots_[slot].active) {
    return;
  }
  Slot& s = slots_[slot];
  size_ -= s.records.size();
  s.records.clear();
  s.sketch.reset();
  s.params = {};
  s.active = false;
}

std::size_t KeyShard::sweep(const core::Clock& clock) {
  std::lock_guard lock(mutex_);
  const core::TimePoint now = clock.now();
  std::size_t dropped = 0;
  for (Slot& s : slots_) {
    if (s.active) {
      dropped += sweep_slot(s, now);
    }
  }
  return dropped;
}

std::size_t KeyShard::tracked(std::uint32_t slot) const {
  std::lock_guard lock(mutex_);
  return slot < slots_.size() ? slots_[slot].records.size() : 0;
}

ShardStats KeyShard::stats() const {
  std::lock_guard lock(mutex_);
  ShardStats stats{.tracked_keys = size_,
                   .evicted_idle = evicted_idle_,
                   .evicted_active = evicted_active_,
                   .memory_bytes = sizeof(KeyShard) + slots_.capacity() * sizeof(Slot)};
  for (const Slot& s : slots_) {
    stats.memory_bytes += s.records.memory_bytes() + (s.sketch ? s.sketch->memory_bytes() : 0);
  }
  return stats;
}

}  // namespace sluice::store
