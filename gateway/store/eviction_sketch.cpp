// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/eviction_sketch.hpp"

#include <bit>

namespace sluice::store {
namespace {
__extension__ using Uint128 = unsigned __int128;
}  // namespace

EvictionSketch::EvictionSketch(std::size_t rings, const RingShape& shape)
    : shape_(shape),
      rings_(rings),
      record_bytes_(record_bytes(shape)),
      data_(rings * record_bytes_) {}

std::byte* EvictionSketch::record_for(std::uint64_t key) {
  // Rotated so the ring index uses other bits than the shard choice (low bits) and the
  // RecordTable's home slot (high bits).
  const std::uint64_t mixed = std::rotl(key, 29);
  const auto index = static_cast<std::size_t>((Uint128{mixed} * rings_) >> 64U);
  return data_.data() + index * record_bytes_;
}

void EvictionSketch::remember(std::uint64_t key, limiter::CountRing evicted, core::TimePoint now) {
  raise_to(ring_of(record_for(key), shape_), evicted, now);
}

void EvictionSketch::seed(std::uint64_t key, limiter::CountRing fresh, core::TimePoint now) {
  auto ghost = ring_of(record_for(key), shape_);
  ghost.advance(now);
  if (ghost.total() == 0) {
    return;
  }
  raise_to(fresh, ghost, now);
}

void EvictionSketch::reshape(const RingShape& shape, core::TimePoint now) {
  const std::size_t new_bytes = record_bytes(shape);
  std::vector<std::byte> data(rings_ * new_bytes);
  for (std::size_t i = 0; i < rings_; ++i) {
    carry_over(ring_of(data.data() + i * new_bytes, shape),
               ring_of(data_.data() + i * record_bytes_, shape_), now);
  }
  shape_ = shape;
  record_bytes_ = new_bytes;
  data_ = std::move(data);
}

bool EvictionSketch::is_idle(core::TimePoint now) {
  for (std::size_t i = 0; i < rings_; ++i) {
    if (!store::is_idle(data_.data() + i * record_bytes_, shape_, now)) {
      return false;
    }
  }
  return true;
}

}  // namespace sluice::store
