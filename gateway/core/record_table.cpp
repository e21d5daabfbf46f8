// SPDX-License-Identifier: Apache-2.0
#include "gateway/core/record_table.hpp"

#include <algorithm>
#include <cassert>

namespace sluice::core {
namespace {

__extension__ using Uint128 = unsigned __int128;

constexpr std::size_t kMinCapacity = 8;
// Load factor bound, as a fraction: at 0.8 a successful lookup ends within the three slots
// prefetch() loads in all but a few cases.
constexpr std::size_t kLoadNum = 4;
constexpr std::size_t kLoadDen = 5;

std::size_t capacity_for(std::size_t entries) {
  return std::max(kMinCapacity, (entries * kLoadDen + kLoadNum - 1) / kLoadNum + 1);
}

}  // namespace

RecordTable::RecordTable(std::size_t record_bytes, std::size_t max_entries)
    : stride_(sizeof(std::uint64_t) + (record_bytes + 7) / 8 * 8),
      max_entries_(max_entries),
      max_capacity_(capacity_for(max_entries)) {
  assert(max_entries >= 1);
}

RecordTable::SlotArray RecordTable::allocate(std::size_t bytes) {
  auto* p = static_cast<std::byte*>(::operator new[](bytes, kAlignment));
  std::memset(p, 0, bytes);  // every key 0: every slot empty
  return SlotArray(p);
}

std::size_t RecordTable::home(std::uint64_t key) const noexcept {
  // Lemire's fast range reduction: maps the key's high bits onto [0, capacity) without a
  // division, for any capacity (so growth can be 1.5x rather than 2x).
  return static_cast<std::size_t>((Uint128{key} * capacity_) >> 64U);
}

std::size_t RecordTable::slot_of(std::uint64_t key) const noexcept {
  assert(key != 0);
  if (size_ == 0) {
    return capacity_;
  }
  for (std::size_t slot = home(key);; slot = next(slot)) {
    const std::uint64_t k = key_at(slot);
    if (k == key) {
      return slot;
    }
    if (k == 0) {
      return capacity_;
    }
  }
}

std::byte* RecordTable::find(std::uint64_t key) noexcept {
  const std::size_t slot = slot_of(key);
  return slot == capacity_ ? nullptr : record_at(slot);
}

bool RecordTable::erase(std::uint64_t key) noexcept {
  const std::size_t slot = slot_of(key);
  if (slot == capacity_) {
    return false;
  }
  erase_slot(slot);
  return true;
}

std::byte* RecordTable::insert(std::uint64_t key) {
  assert(key != 0 && size_ < max_entries_);
  if ((size_ + 1) * kLoadDen > capacity_ * kLoadNum) {
    grow();
  }
  std::size_t slot = home(key);
  while (key_at(slot) != 0) {
    slot = next(slot);
  }
  set_key(slot, key);
  ++size_;
  std::byte* record = record_at(slot);
  std::memset(record, 0, record_bytes());
  return record;
}

void RecordTable::erase_slot(std::size_t slot) noexcept {
  assert(key_at(slot) != 0);
  // Backward-shift deletion: pull later entries of the probe run into the hole whenever the
  // hole lies between their home and their current slot, so lookups never need tombstones.
  std::size_t hole = slot;
  for (std::size_t j = next(hole); key_at(j) != 0; j = next(j)) {
    const std::size_t h = home(key_at(j));
    const std::size_t dist_home = (j + capacity_ - h) % capacity_;
    const std::size_t dist_hole = (j + capacity_ - hole) % capacity_;
    if (dist_home >= dist_hole) {
      std::memcpy(slot_ptr(hole), slot_ptr(j), stride_);
      hole = j;
    }
  }
  set_key(hole, 0);
  --size_;
}

void RecordTable::clear() noexcept {
  slots_.reset();
  capacity_ = 0;
  size_ = 0;
}

void RecordTable::grow() {
  const std::size_t wanted = std::max(kMinCapacity, capacity_ + capacity_ / 2);
  rehash(std::min(wanted, max_capacity_));
}

void RecordTable::rehash(std::size_t new_capacity) {
  assert(new_capacity > capacity_);
  SlotArray old = std::move(slots_);
  const std::size_t old_capacity = capacity_;
  slots_ = allocate(new_capacity * stride_);
  capacity_ = new_capacity;
  for (std::size_t i = 0; i < old_capacity; ++i) {
    const std::byte* from = old.get() + i * stride_;
    std::uint64_t key = 0;
    std::memcpy(&key, from, sizeof key);
    if (key == 0) {
      continue;
    }
    std::size_t slot = home(key);
    while (key_at(slot) != 0) {
      slot = next(slot);
    }
    std::memcpy(slot_ptr(slot), from, stride_);
  }
}

}  // namespace sluice::core
