// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

namespace sluice::core {

/// An open-addressing hash table from a non-zero 64-bit key (already a good hash) to a
/// fixed-size, 8-byte aligned record of `record_bytes` chosen at run time. Each slot holds the
/// key followed by its record, in one cache-line-aligned array: with a 56-byte record a slot is
/// exactly one cache line, so a lookup in a table far larger than the caches costs one memory
/// access (prefetch() overlaps it with the caller's other work). A tracked key costs
/// (8 + record_bytes) / load bytes. Linear probing, backward-shift deletion (no tombstones),
/// load kept at or below 0.8, growth by 1.5x up to the capacity `max_entries` needs, never beyond.
///
/// Why not boost::unordered_flat_map: the limiter's records are now a fixed 40 bytes (sparse
/// windows, docs/architecture.md "Sparse key state"), so a flat map could hold them, but the
/// memory store's eviction samples occupied slots by index from a resumable cursor and needs the
/// exact capacity bound above; a flat map offers neither slot indexes nor a growth limit.
///
/// Records are trivially copyable bytes: inserting or erasing may move other records, so
/// pointers returned by find()/insert() are valid only until the next insert or erase.
/// Not thread-safe; the owner serialises access.
class RecordTable {
 public:
  /// `record_bytes` is rounded up to a multiple of 8. `max_entries` >= 1.
  RecordTable(std::size_t record_bytes, std::size_t max_entries);

  /// Starts loading the memory a find(key) touches first (the home slot and the two after it,
  /// where all but a few lookups end), so the cache misses of a lookup overlap each other and
  /// whatever the caller does next. A hint only; any key is fine.
  void prefetch(std::uint64_t key) const noexcept {
    if (capacity_ != 0) {
      const std::byte* first = slot_ptr(home(key));
      __builtin_prefetch(first);
      __builtin_prefetch(first + stride_);
      __builtin_prefetch(first + 2 * stride_);
    }
  }
  /// The record of `key`, or nullptr. `key` must not be 0.
  [[nodiscard]] std::byte* find(std::uint64_t key) noexcept;
  /// Inserts absent `key` with a zero-filled record and returns it. Requires size() <
  /// max_entries() (the owner evicts first).
  std::byte* insert(std::uint64_t key);
  /// Removes `key`'s entry; false if absent.
  bool erase(std::uint64_t key) noexcept;
  /// Removes the entry in `slot` (an occupied slot index).
  void erase_slot(std::size_t slot) noexcept;
  /// Removes every entry for which `pred(key, record)` is true; returns how many.
  template <typename Pred>
  std::size_t erase_if(Pred&& pred) {
    std::size_t erased = 0;
    for (std::size_t i = 0; i < capacity_;) {
      if (key_at(i) != 0 && pred(key_at(i), record_at(i))) {
        erase_slot(i);  // a later entry may have shifted into i: look at i again
        ++erased;
      } else {
        ++i;
      }
    }
    return erased;
  }
  /// Removes every entry and frees the array.
  void clear() noexcept;

  // Slot-level access, for sampling eviction candidates and walking all entries.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::uint64_t key_at(std::size_t slot) const noexcept {
    std::uint64_t key = 0;
    std::memcpy(&key, slot_ptr(slot), sizeof key);
    return key;
  }
  [[nodiscard]] std::byte* record_at(std::size_t slot) noexcept {
    return slot_ptr(slot) + sizeof(std::uint64_t);
  }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t max_entries() const noexcept { return max_entries_; }
  [[nodiscard]] std::size_t record_bytes() const noexcept {
    return stride_ - sizeof(std::uint64_t);
  }
  /// Bytes held by the slot array.
  [[nodiscard]] std::size_t memory_bytes() const noexcept { return capacity_ * stride_; }

 private:
  static constexpr std::align_val_t kAlignment{64};  // a cache line
  struct FreeSlots {
    void operator()(std::byte* p) const noexcept { ::operator delete[](p, kAlignment); }
  };
  /// Owns the first byte of an aligned array (the deleter frees the whole array).
  using SlotArray = std::unique_ptr<std::byte, FreeSlots>;

  [[nodiscard]] static SlotArray allocate(std::size_t bytes);
  [[nodiscard]] std::byte* slot_ptr(std::size_t slot) const noexcept {
    return slots_.get() + slot * stride_;
  }
  void set_key(std::size_t slot, std::uint64_t key) noexcept {
    std::memcpy(slot_ptr(slot), &key, sizeof key);
  }
  [[nodiscard]] std::size_t home(std::uint64_t key) const noexcept;
  /// The slot holding `key`, or capacity_ when absent.
  [[nodiscard]] std::size_t slot_of(std::uint64_t key) const noexcept;
  [[nodiscard]] std::size_t next(std::size_t slot) const noexcept {
    return slot + 1 == capacity_ ? 0 : slot + 1;
  }
  void grow();
  void rehash(std::size_t new_capacity);

  std::size_t stride_;  ///< key + record
  std::size_t max_entries_;
  std::size_t max_capacity_;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
  SlotArray slots_;  ///< a zero key marks an empty slot
};

}  // namespace sluice::core
