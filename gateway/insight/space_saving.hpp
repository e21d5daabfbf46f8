// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sluice::insight {

/// The Space-Saving summary of a stream of 64-bit keys (Metwally, Agrawal and El Abbadi,
/// "Efficient Computation of Frequent and Top-k Elements in Data Streams", ICDT 2005): at most
/// `capacity` monitored keys. A key that arrives while every entry is taken replaces the entry
/// with the smallest count and inherits that count, so:
/// - an entry's `count` overestimates its key's true count by at most its `error`, and `error`
///   is at most min_count();
/// - a key without an entry occurred at most min_count() times;
/// - min_count() is at most total() / capacity, and 0 while fewer keys than `capacity` arrived
///   (every count is then exact).
/// Each entry also counts the key's `limited` occurrences while it holds the entry: a lower
/// bound of the true figure, short by at most `error`.
///
/// The entries are kept in the paper's Stream-Summary: buckets of equal counts in ascending
/// order, each with its entries in a list, so that both an increment and a replacement take O(1)
/// steps (a tie of thousands of entries, as uniform traffic makes, costs nothing more). Entries
/// never move; an open-addressing index (linear probing, deletion by backward shift) finds a
/// key's. All links are 32-bit indices into arrays allocated once. Not thread-safe: the owner
/// serialises.
class SpaceSaving {
 public:
  struct Entry {
    std::uint64_t key = 0;
    std::uint64_t count = 0;
    std::uint64_t error = 0;    ///< the count inherited when the key took the entry over
    std::uint64_t limited = 0;  ///< limited occurrences since the key took the entry
    std::uint32_t slot = 0;     ///< the entry's place in the index
  };

  /// Precondition: 0 < capacity < 2^30.
  explicit SpaceSaving(std::size_t capacity);

  /// Counts one occurrence of `key` (`limited`: one limited decision too).
  void add(std::uint64_t key, bool limited) noexcept;
  /// Forgets every key; keeps the memory.
  void clear() noexcept;

  /// The entry of `key`, or null when it is not monitored.
  [[nodiscard]] const Entry* find(std::uint64_t key) const noexcept;
  /// The monitored keys, in no particular order.
  [[nodiscard]] std::span<const Entry> entries() const noexcept { return entries_; }
  /// The bound on every entry's overestimate and on an unmonitored key's count: the smallest
  /// count once every entry is taken, else 0.
  [[nodiscard]] std::uint64_t min_count() const noexcept {
    return entries_.size() < capacity_ ? 0 : buckets_[min_bucket_].count;
  }
  /// Occurrences counted since construction or clear().
  [[nodiscard]] std::uint64_t total() const noexcept { return total_; }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffU;
  struct Slot {
    std::uint64_t key = 0;
    std::uint32_t pos = kNone;  ///< the entry's index in entries_, or kNone: empty
  };
  /// An entry's place: its bucket, its neighbours in the bucket's list.
  struct Link {
    std::uint32_t bucket = kNone;
    std::uint32_t prev = kNone;
    std::uint32_t next = kNone;
  };
  /// The entries of one count; the buckets form a list in ascending count order.
  struct Bucket {
    std::uint64_t count = 0;
    std::uint32_t first = kNone;  ///< an entry
    std::uint32_t prev = kNone;
    std::uint32_t next = kNone;  ///< the next larger count; in the free list, the next free
  };

  [[nodiscard]] std::size_t home(std::uint64_t key) const noexcept;
  /// The slot holding `key`, or the empty slot where it would go.
  [[nodiscard]] std::size_t probe(std::uint64_t key) const noexcept;
  void erase_slot(std::size_t slot) noexcept;
  /// Adds 1 to entry `e`'s count, moving it to the bucket of its new count.
  void increment(std::uint32_t e) noexcept;
  void attach(std::uint32_t e, std::uint32_t bucket) noexcept;
  void detach(std::uint32_t e) noexcept;
  /// A new bucket of `count` after `before` (kNone: first in the list).
  [[nodiscard]] std::uint32_t new_bucket(std::uint64_t count, std::uint32_t before) noexcept;
  void free_bucket(std::uint32_t bucket) noexcept;

  std::size_t capacity_;
  std::vector<Entry> entries_;
  std::vector<Link> links_;         ///< parallel to entries_
  std::vector<Bucket> buckets_;     ///< capacity_ of them: never more counts than entries
  std::uint32_t buckets_used_ = 0;  ///< buckets_[0, buckets_used_) have been handed out
  std::uint32_t free_buckets_ = kNone;
  std::uint32_t min_bucket_ = kNone;  ///< the smallest count's bucket
  std::vector<Slot> slots_;           ///< a power of two, at least twice the capacity
  std::size_t mask_;
  std::uint64_t total_ = 0;
};

}  // namespace sluice::insight
