// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>

#include "gateway/core/clock.hpp"

namespace sluice::limiter {

/// One counted bucket of a sparse ring: the low 16 bits of its bucket number (its start over
/// the width, on the global grid) and its count. A window spans at most 3600 buckets, so 16 bits
/// tell every bucket in it apart.
struct SparsePair {
  std::uint16_t bucket = 0;
  std::uint16_t count = 0;
};

/// A key's window in 40 bytes whatever the bucket count (docs/architecture.md "Sparse key
/// state"): the head bucket's number, the total, and the buckets that hold counts, in one of
/// three forms:
/// - inline: up to kInlinePairs counted buckets as pairs, oldest first, in the state itself;
/// - list: the pairs in a heap ring of 16, 32, ... pairs (a header pair {capacity, first} and
///   then the pairs), for a key counted in more buckets, while that is smaller than a block;
/// - block: a heap ring of `buckets` 32-bit counts (then the head's slot), what the dense ring
///   costs, for a key counted in most of its buckets or more than 65535 times in one.
/// A key goes back inline once at most kInlineAgain buckets hold counts. All zero bytes are
/// the empty inline ring, so records can be zero-filled and moved with memcpy.
struct SparseRingState {
  static constexpr std::uint16_t kInlinePairs = 6;
  static constexpr std::uint16_t kInlineAgain = 3;
  static constexpr std::uint16_t kFirstList = 16;
  static constexpr std::uint32_t kPairCountMax = 0xFFFF;
  enum Form : std::uint8_t { kInline = 0, kList = 1, kBlock = 2 };

  std::int64_t head = 0;    ///< Number of the head bucket: its start over the width.
  std::uint32_t total = 0;  ///< Every count in the window.
  std::uint16_t live = 0;   ///< Buckets holding counts.
  std::uint8_t form = kInline;
  std::uint8_t first = 0;  ///< Inline: where the oldest pair is.
  union {
    SparsePair pairs[kInlinePairs] = {};
    SparsePair* list;  ///< list[0] = {capacity, first}; the pairs follow
    std::uint32_t* block;
  };
};
static_assert(sizeof(SparseRingState) == 40);

/// The sliding window's ring (core::RingRef's contract, docs/architecture.md "The rolling
/// window") over a SparseRingState: the same buckets on the same grid, hence the same decisions,
/// but a key counted in few buckets takes no memory beyond its 40 bytes. `block_bytes`, when
/// given, tracks the heap bytes the owner's rings hold. Not thread-safe; the owner of the state
/// serialises access and calls release() before it forgets a state (the block is the state's
/// only owned resource).
class SparseCountRing {
 public:
  SparseCountRing(SparseRingState& state, std::uint32_t buckets, core::Duration width,
                  std::size_t* block_bytes = nullptr) noexcept
      : state_(state), buckets_(buckets), width_(width.count()), block_bytes_(block_bytes) {
    assert(buckets > 0 && width_ > 0);
  }

  /// Empties the ring and puts the head on the bucket covering `now`.
  void reset(core::TimePoint now) noexcept;
  /// Moves the head to the bucket covering `now`, dropping buckets that left the window. A
  /// `now` before the head bucket's start counts as the head bucket.
  void advance(core::TimePoint now) noexcept;
  /// Adds to the head bucket (call advance() first). May allocate the block.
  void add(std::uint32_t n);
  /// Counts `n` in the bucket `age` buckets before the head, which must be newer than every
  /// bucket already counted (rebuilding a ring oldest first).
  void add_at_age(std::uint32_t age, std::uint32_t n);
  /// Frees the block, if any, and empties the ring (the head stays).
  void release() noexcept;

  [[nodiscard]] std::uint32_t total() const noexcept { return state_.total; }
  [[nodiscard]] std::size_t size() const noexcept { return buckets_; }
  [[nodiscard]] core::Duration width() const noexcept { return core::Duration(width_); }
  [[nodiscard]] core::TimePoint head_start() const noexcept {
    return core::TimePoint(core::Duration(state_.head * width_));
  }
  /// Heap bytes of a block for `buckets` buckets, and of a list of `capacity` pairs.
  [[nodiscard]] static constexpr std::size_t block_bytes_for(std::uint32_t buckets) noexcept {
    return (std::size_t{buckets} + 1) * sizeof(std::uint32_t);
  }
  [[nodiscard]] static constexpr std::size_t list_bytes_for(std::uint32_t capacity) noexcept {
    return (std::size_t{capacity} + 1) * sizeof(SparsePair);
  }
  /// Start time of bucket `i` counted from the oldest (0) to the head (N-1).
  [[nodiscard]] core::TimePoint start_from_oldest(std::size_t i) const noexcept {
    const auto back = static_cast<std::int64_t>(buckets_ - 1 - i);
    return core::TimePoint(core::Duration((state_.head - back) * width_));
  }
  /// Buckets holding counts.
  [[nodiscard]] std::size_t counted_buckets() const noexcept { return state_.live; }
  [[nodiscard]] bool in_block() const noexcept { return state_.form == SparseRingState::kBlock; }
  [[nodiscard]] bool in_list() const noexcept { return state_.form == SparseRingState::kList; }
  /// Calls `fn(index_from_oldest, count)` for each bucket holding counts, oldest first, until
  /// `fn` returns true; returns that index, or size() if it never did.
  template <typename Fn>
  std::size_t visit_counted(Fn&& fn) const {
    if (state_.form != SparseRingState::kBlock) {
      const PairRing r = pair_ring();
      for (std::size_t j = 0; j < state_.live; ++j) {
        const SparsePair& p = r.at(j);
        const std::size_t index = buckets_ - 1 - age_of(p);
        if (fn(index, std::uint32_t{p.count})) {
          return index;
        }
      }
      return buckets_;
    }
    // Oldest first: the slot after the head to the end, then the start up to the head.
    const std::uint32_t first = head_slot() + 1 == buckets_ ? 0 : head_slot() + 1;
    for (std::uint32_t slot = first; slot < buckets_; ++slot) {
      if (state_.block[slot] != 0 && fn(std::size_t{slot - first}, state_.block[slot])) {
        return slot - first;
      }
    }
    for (std::uint32_t slot = 0; slot < first; ++slot) {
      const std::size_t index = buckets_ - first + slot;
      if (state_.block[slot] != 0 && fn(index, state_.block[slot])) {
        return index;
      }
    }
    return buckets_;
  }
  /// Index (from the oldest) of the first bucket holding counts for which `pred(count)` is
  /// true; size() if none. Empty buckets are skipped, so `pred` must be one that an empty
  /// bucket cannot make true (a running sum, or "not empty").
  template <typename Pred>
  [[nodiscard]] std::size_t find_from_oldest(Pred&& pred) const {
    return visit_counted([&](std::size_t, std::uint32_t c) { return pred(c); });
  }

 private:
  /// The block's slot of the head bucket (block form only), kept after the counts.
  [[nodiscard]] std::uint32_t& head_slot() const noexcept { return state_.block[buckets_]; }
  /// Adds to the block's bucket `age` buckets before the head.
  void add_to_block(std::uint32_t age, std::uint32_t n) noexcept;
  /// The pairs of the inline or list form: a ring of `capacity` pairs from `base`.
  struct PairRing {
    SparsePair* base;
    std::uint16_t capacity;
    std::uint16_t first;
    [[nodiscard]] SparsePair& at(std::size_t i) const noexcept {
      const std::size_t slot = first + i;
      return base[slot < capacity ? slot : slot - capacity];
    }
  };
  [[nodiscard]] PairRing pair_ring() const noexcept;
  void set_first(std::uint16_t first) noexcept;
  [[nodiscard]] std::uint16_t age_of(const SparsePair& p) const noexcept {
    return static_cast<std::uint16_t>(static_cast<std::uint16_t>(state_.head) - p.bucket);
  }
  /// Adds to the pair of the bucket `age` buckets before the head (the newest counted or a
  /// newer one), growing the list; false if the key must move to the block.
  bool add_pair(std::uint32_t age, std::uint32_t n);
  /// A ring of `capacity` pairs holding the current ones; false (and the block) when a list
  /// that large would cost as much as the block.
  bool grow_pairs(std::uint16_t capacity);
  void to_block();
  void to_inline() noexcept;
  /// Frees the heap list or block, if any (the form becomes inline, the pairs are garbage).
  void free_heap() noexcept;

  SparseRingState& state_;
  std::uint32_t buckets_;
  std::int64_t width_;
  std::size_t* block_bytes_;
};

}  // namespace sluice::limiter
