// SPDX-License-Identifier: Apache-2.0
#include "gateway/limiter/sparse_count_ring.hpp"

#include <algorithm>
#include <memory>

namespace sluice::limiter {
namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) noexcept {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

}  // namespace

SparseCountRing::PairRing SparseCountRing::pair_ring() const noexcept {
  if (state_.form == SparseRingState::kInline) {
    return {state_.pairs, SparseRingState::kInlinePairs, state_.first};
  }
  return {state_.list + 1, state_.list[0].bucket, state_.list[0].count};
}

void SparseCountRing::set_first(std::uint16_t first) noexcept {
  if (state_.form == SparseRingState::kInline) {
    state_.first = static_cast<std::uint8_t>(first);
  } else {
    state_.list[0].count = first;
  }
}

void SparseCountRing::reset(core::TimePoint now) noexcept {
  release();
  state_.head = floor_div(now.time_since_epoch().count(), width_);
}

void SparseCountRing::release() noexcept {
  free_heap();
  state_.live = 0;
  state_.total = 0;
  state_.first = 0;
  std::fill(std::begin(state_.pairs), std::end(state_.pairs), SparsePair{});
}

void SparseCountRing::advance(core::TimePoint now) noexcept {
  const std::int64_t elapsed = now.time_since_epoch().count() - state_.head * width_;
  if (elapsed < width_) {
    return;  // the common case: still inside the head bucket
  }
  const std::int64_t steps = elapsed / width_;
  state_.head += steps;
  if (state_.live == 0) {
    return;
  }
  if (steps >= static_cast<std::int64_t>(buckets_)) {
    release();  // every counted bucket left the window
    return;
  }
  if (state_.form != SparseRingState::kBlock) {
    // Oldest first: drop from the front while the oldest has left the window. Ages stay below
    // twice the bucket count (< 2^16), so 16-bit arithmetic tells them exactly.
    PairRing r = pair_ring();
    while (state_.live != 0 && age_of(r.at(0)) >= buckets_) {
      state_.total -= r.at(0).count;
      r.at(0) = {};
      r.first = r.first + 1 == r.capacity ? 0 : static_cast<std::uint16_t>(r.first + 1);
      --state_.live;
    }
    set_first(r.first);
    if (state_.form == SparseRingState::kList && state_.live <= SparseRingState::kInlineAgain) {
      to_inline();
    }
    return;
  }
  // Block: the slots time skipped held what was counted N buckets earlier; empty them.
  std::uint32_t& slot = head_slot();
  for (std::int64_t i = 0; i < steps; ++i) {
    slot = slot + 1 == buckets_ ? 0 : slot + 1;
    std::uint32_t& c = state_.block[slot];
    if (c != 0) {
      state_.total -= c;
      --state_.live;
      c = 0;
    }
  }
  if (state_.live <= SparseRingState::kInlineAgain) {
    to_inline();
  }
}

void SparseCountRing::add(std::uint32_t n) {
  add_at_age(0, n);
}

void SparseCountRing::add_at_age(std::uint32_t age, std::uint32_t n) {
  assert(age < buckets_);
  if (n == 0) {
    return;
  }
  if (state_.form != SparseRingState::kBlock && !add_pair(age, n) &&
      state_.form != SparseRingState::kBlock) {
    to_block();
  }
  if (state_.form == SparseRingState::kBlock) {
    add_to_block(age, n);
  }
  state_.total += n;
}

bool SparseCountRing::add_pair(std::uint32_t age, std::uint32_t n) {
  const auto low = static_cast<std::uint16_t>(state_.head - age);
  PairRing r = pair_ring();
  if (state_.live != 0 && r.at(state_.live - 1U).bucket == low) {
    SparsePair& newest = r.at(state_.live - 1U);
    const std::uint32_t sum = std::uint32_t{newest.count} + n;
    if (sum > SparseRingState::kPairCountMax) {
      return false;
    }
    newest.count = static_cast<std::uint16_t>(sum);
    return true;
  }
  if (n > SparseRingState::kPairCountMax) {
    return false;
  }
  if (state_.live == r.capacity) {
    const auto capacity = static_cast<std::uint16_t>(
        state_.form == SparseRingState::kInline ? SparseRingState::kFirstList : r.capacity * 2);
    if (!grow_pairs(capacity)) {
      return false;
    }
    r = pair_ring();
  }
  r.at(state_.live) = {low, static_cast<std::uint16_t>(n)};
  ++state_.live;
  return true;
}

bool SparseCountRing::grow_pairs(std::uint16_t capacity) {
  // A list of N pairs would cost as much as the block (4 bytes per bucket either way).
  if (capacity >= buckets_) {
    return false;
  }
  auto list = std::make_unique<SparsePair[]>(capacity + 1U);
  const PairRing r = pair_ring();
  for (std::size_t i = 0; i < state_.live; ++i) {
    list[i + 1] = r.at(i);
  }
  list[0] = {capacity, 0};
  free_heap();
  state_.list = list.release();
  state_.form = SparseRingState::kList;
  if (block_bytes_ != nullptr) {
    *block_bytes_ += list_bytes_for(capacity);
  }
  return true;
}

void SparseCountRing::add_to_block(std::uint32_t age, std::uint32_t n) noexcept {
  const std::uint32_t head = head_slot();
  std::uint32_t& c = state_.block[head >= age ? head - age : head + buckets_ - age];
  if (c == 0) {
    ++state_.live;
  }
  c += n;
}

void SparseCountRing::to_block() {
  auto block = std::make_unique<std::uint32_t[]>(buckets_ + 1);  // zero-filled
  // Any slot can be the head's: put it last, so the pairs' ages count back from there.
  const std::uint32_t head_slot = buckets_ - 1;
  block[buckets_] = head_slot;
  const PairRing r = pair_ring();
  for (std::size_t i = 0; i < state_.live; ++i) {
    block[head_slot - age_of(r.at(i))] = r.at(i).count;
  }
  free_heap();
  state_.block = block.release();
  state_.form = SparseRingState::kBlock;
  if (block_bytes_ != nullptr) {
    *block_bytes_ += block_bytes_for(buckets_);
  }
}

void SparseCountRing::to_inline() noexcept {
  // Called with at most kInlineAgain buckets counted, so the pairs fit.
  SparsePair kept[SparseRingState::kInlinePairs] = {};
  std::uint16_t live = 0;
  const std::size_t stopped = visit_counted([&](std::size_t index, std::uint32_t c) {
    if (c > SparseRingState::kPairCountMax) {
      return true;  // too large for 16 bits: the key keeps its block
    }
    const std::int64_t number = state_.head - static_cast<std::int64_t>(buckets_ - 1 - index);
    kept[live++] = {static_cast<std::uint16_t>(number), static_cast<std::uint16_t>(c)};
    return false;
  });
  if (stopped != buckets_) {
    return;
  }
  free_heap();
  std::copy(std::begin(kept), std::end(kept), state_.pairs);
  state_.first = 0;
}

void SparseCountRing::free_heap() noexcept {
  if (state_.form == SparseRingState::kList) {
    if (block_bytes_ != nullptr) {
      *block_bytes_ -= list_bytes_for(state_.list[0].bucket);
    }
    delete[] state_.list;
  } else if (state_.form == SparseRingState::kBlock) {
    if (block_bytes_ != nullptr) {
      *block_bytes_ -= block_bytes_for(buckets_);
    }
    delete[] state_.block;
  } else {
    return;
  }
  state_.form = SparseRingState::kInline;
  state_.first = 0;
}

}  // namespace sluice::limiter
