// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>

#include "gateway/core/record_table.hpp"
#include "gateway/limiter/sparse_count_ring.hpp"
#include "gateway/store/key_record.hpp"

namespace sluice::store {

/// One policy's tracked keys in one shard: a RecordTable of 40-byte sparse rings of one shape (a
/// slot of 48 bytes with its key), plus the blocks of the few keys counted in more buckets than
/// fit inline (limiter::SparseRingState). Owns those blocks: every way a key leaves the table
/// (erase, erase_if, clear, destruction, move-assignment) frees its block, so the table can never
/// leak one. Not thread-safe; the owning shard's lock covers it.
class KeyRecords {
 public:
  KeyRecords(const RingShape& shape, std::size_t max_entries)
      : shape_(shape), table_(kKeyRecordBytes, max_entries) {}
  ~KeyRecords() { release_all(); }
  KeyRecords(KeyRecords&& other) noexcept;
  KeyRecords& operator=(KeyRecords&& other) noexcept;
  KeyRecords(const KeyRecords&) = delete;
  KeyRecords& operator=(const KeyRecords&) = delete;

  void prefetch(std::uint64_t key) const noexcept { table_.prefetch(key); }
  /// The record of `key`, or nullptr. Valid until the next insert or erase.
  [[nodiscard]] std::byte* find(std::uint64_t key) noexcept { return table_.find(key); }
  /// Inserts absent `key` with an empty ring (size() < max_entries()).
  std::byte* insert(std::uint64_t key) { return table_.insert(key); }
  /// Removes the entry in `slot` (an occupied slot index).
  void erase_slot(std::size_t slot) noexcept;
  /// Removes every entry for which `pred(key, record)` is true; returns how many.
  template <typename Pred>
  std::size_t erase_if(Pred&& pred) {
    return table_.erase_if([&](std::uint64_t key, std::byte* record) {
      if (!pred(key, record)) {
        return false;
      }
      release(record);
      return true;
    });
  }
  void clear() noexcept;

  /// The ring in `record` (valid while the record does not move), its block's bytes counted here.
  [[nodiscard]] limiter::SparseCountRing ring(std::byte* record) noexcept {
    return {key_ring_state_of(record), shape_.buckets, shape_.width, &block_bytes_};
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return table_.capacity(); }
  [[nodiscard]] std::uint64_t key_at(std::size_t slot) const noexcept {
    return table_.key_at(slot);
  }
  [[nodiscard]] std::byte* record_at(std::size_t slot) noexcept { return table_.record_at(slot); }
  [[nodiscard]] std::size_t size() const noexcept { return table_.size(); }
  /// Bytes of the slot array plus the blocks.
  [[nodiscard]] std::size_t memory_bytes() const noexcept {
    return table_.memory_bytes() + block_bytes_;
  }
  /// Bytes of the blocks alone.
  [[nodiscard]] std::size_t block_bytes() const noexcept { return block_bytes_; }

 private:
  void release(std::byte* record) noexcept;
  void release_all() noexcept;

  RingShape shape_;
  core::RecordTable table_;
  std::size_t block_bytes_ = 0;
};

}  // namespace sluice::store
