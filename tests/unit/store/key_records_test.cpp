// SPDX-License-Identifier: Apache-2.0
// KeyRecords owns the blocks of keys counted in many buckets: every way a key leaves
// gives its block back (the sanitizer builds would also report a leak).
#include "gateway/store/key_records.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "tests/support/manual_clock.hpp"

namespace sluice::store {
namespace {

using namespace std::chrono_literals;

const RingShape kShape{.buckets = 60, .width = 1s};

/// Tracks `key` with one request in each of `buckets` consecutive buckets from `t0`.
void track(KeyRecords& records, std::uint64_t key, int buckets, core::TimePoint t0) {
  std::byte* record = records.insert(key);
  auto ring = records.ring(record);
  ring.reset(t0);
  for (int i = 0; i < buckets; ++i) {
    ring.advance(t0 + i * 1s);
    ring.add(1);
  }
}

TEST(KeyRecordsTest, ASlotIsFortyEightBytesAndSixBucketsNeedNoBlock) {
  KeyRecords records(kShape, 1000);
  const core::TimePoint t0 = testing::ManualClock().now();
  for (std::uint64_t key = 1; key <= 100; ++key) {
    track(records, key, 6, t0);
  }
  EXPECT_EQ(records.block_bytes(), 0U);
  EXPECT_EQ(records.memory_bytes(), records.capacity() * 48);
}

TEST(KeyRecordsTest, EveryWayOutGivesTheBlockBack) {
  const core::TimePoint t0 = testing::ManualClock().now();
  KeyRecords records(kShape, 1000);
  for (std::uint64_t key = 1; key <= 10; ++key) {
    track(records, key, 7, t0);  // 7 buckets: a list of 16 pairs
  }
  constexpr std::size_t kBlock = limiter::SparseCountRing::list_bytes_for(16);
  EXPECT_EQ(records.block_bytes(), 10 * kBlock);
  // erase_slot
  for (std::size_t slot = 0; slot < records.capacity(); ++slot) {
    if (records.key_at(slot) == 1) {
      records.erase_slot(slot);
      break;
    }
  }
  EXPECT_EQ(records.block_bytes(), 9 * kBlock);
  // erase_if
  EXPECT_EQ(records.erase_if([](std::uint64_t key, std::byte*) { return key % 2 == 0; }), 5U);
  EXPECT_EQ(records.block_bytes(), 4 * kBlock);
  // move-assignment frees what the target held and takes the source's blocks
  KeyRecords other(kShape, 1000);
  track(other, 42, 40, t0);  // 40 of 60 buckets: a block
  records = std::move(other);
  EXPECT_EQ(records.size(), 1U);
  EXPECT_EQ(records.block_bytes(), limiter::SparseCountRing::block_bytes_for(60));
  // clear
  records.clear();
  EXPECT_EQ(records.block_bytes(), 0U);
  EXPECT_EQ(records.size(), 0U);
  // destruction (checked by the sanitizer builds' leak checker)
  KeyRecords dropped(kShape, 1000);
  track(dropped, 7, 30, t0);
  EXPECT_GT(dropped.block_bytes(), 0U);
}

}  // namespace
}  // namespace sluice::store
