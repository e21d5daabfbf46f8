// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/eviction_sketch.hpp"

#include <algorithm>
#include <bit>
#include <utility>

namespace sluice::store {
namespace {
__extension__ using Uint128 = unsigned __int128;

/// A counted bucket: its index from the oldest and its count.
using Counted = std::pair<std::size_t, std::uint32_t>;

std::vector<Counted> counted_of(const limiter::SparseCountRing& ring) {
  std::vector<Counted> out;
  ring.visit_counted([&](std::size_t index, std::uint32_t count) {
    out.emplace_back(index, count);
    return false;
  });
  return out;
}

/// Raises every bucket of `into` to at least the same bucket of `from` (one grid): merges the
/// two oldest-first lists and rebuilds `into` from the merge.
void raise_to(limiter::SparseCountRing into, limiter::SparseCountRing from, core::TimePoint now) {
  into.advance(now);
  from.advance(now);
  if (from.total() == 0) {
    return;
  }
  const std::vector<Counted> mine = counted_of(into);
  const std::vector<Counted> theirs = counted_of(from);
  std::vector<Counted> merged;
  merged.reserve(mine.size() + theirs.size());
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < mine.size() || j < theirs.size()) {
    if (j == theirs.size() || (i < mine.size() && mine[i].first < theirs[j].first)) {
      merged.push_back(mine[i++]);
    } else if (i == mine.size() || theirs[j].first < mine[i].first) {
      merged.push_back(theirs[j++]);
    } else {
      merged.emplace_back(mine[i].first, std::max(mine[i].second, theirs[j].second));
      ++i;
      ++j;
    }
  }
  into.release();  // the head stays where advance() put it
  const std::size_t n = into.size();
  for (const auto& [index, count] : merged) {
    into.add_at_age(static_cast<std::uint32_t>(n - 1 - index), count);
  }
}

}  // namespace

EvictionSketch::EvictionSketch(std::size_t rings, const RingShape& shape)
    : shape_(shape), rings_(rings) {}

EvictionSketch::~EvictionSketch() {
  for (std::size_t i = 0; block_bytes_ != 0 && i < rings_.size(); ++i) {
    ring_at(i).release();
  }
}

limiter::SparseCountRing EvictionSketch::ring_for(std::uint64_t key) {
  // Rotated so the ring index uses other bits than the shard choice (low bits) and the
  // RecordTable's home slot (high bits).
  const std::uint64_t mixed = std::rotl(key, 29);
  return ring_at(static_cast<std::size_t>((Uint128{mixed} * rings_.size()) >> 64U));
}

void EvictionSketch::remember(std::uint64_t key, limiter::SparseCountRing evicted,
                              core::TimePoint now) {
  raise_to(ring_for(key), evicted, now);
}

void EvictionSketch::seed(std::uint64_t key, limiter::SparseCountRing fresh, core::TimePoint now) {
  auto ghost = ring_for(key);
  ghost.advance(now);
  if (ghost.total() == 0) {
    return;
  }
  // `fresh` was just reset at `now`: the ghost's buckets go in oldest first.
  const std::size_t n = ghost.size();
  ghost.visit_counted([&](std::size_t index, std::uint32_t count) {
    fresh.add_at_age(static_cast<std::uint32_t>(n - 1 - index), count);
    return false;
  });
}

void EvictionSketch::reshape(const RingShape& shape, core::TimePoint now) {
  std::vector<limiter::SparseRingState> rings(rings_.size());
  std::size_t block_bytes = 0;
  for (std::size_t i = 0; i < rings_.size(); ++i) {
    auto old = ring_at(i);
    carry_over({rings[i], shape.buckets, shape.width, &block_bytes}, old, now);
    old.release();
  }
  shape_ = shape;
  rings_ = std::move(rings);
  block_bytes_ = block_bytes;
}

bool EvictionSketch::is_idle(core::TimePoint now) const {
  return std::all_of(rings_.begin(), rings_.end(), [&](const limiter::SparseRingState& s) {
    return store::is_idle(s, shape_, now);
  });
}

}  // namespace sluice::store
