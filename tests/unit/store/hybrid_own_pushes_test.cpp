// SPDX-License-Identifier: Apache-2.0
// What a hybrid replica has pushed, per key and bucket: the part of the fleet's count that is
// its own, when it sets a TTL, and what it forgets (docs/distributed.md, "Hybrid mode").
#include "gateway/store/hybrid_own_pushes.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace sluice::store {
namespace {

constexpr JournalKey kCarol{0, 0x1100000000000011ULL};
constexpr JournalKey kDave{0, 0x2200000000000022ULL};
constexpr JournalKey kCarolOther{1, 0x1100000000000011ULL};

TEST(HybridOwnPushesTest, OwnRequestsCountInTheBucketsStillLive) {
  HybridOwnPushes own;
  own.add(kCarol, 1000, 3, 0);
  own.add(kCarol, 2000, 2, 0);
  own.add(kCarol, 2000, 1, 0);
  own.add(kDave, 2000, 7, 0);
  EXPECT_EQ(own.live(kCarol, 0), 6U);
  EXPECT_EQ(own.live(kCarol, 2000), 3U);  // the bucket at 1000 left
  EXPECT_EQ(own.live(kCarol, 3000), 0U);
  EXPECT_EQ(own.live(kCarolOther, 0), 0U);  // another policy's window
  EXPECT_EQ(own.live(kDave, 0), 7U);
}

TEST(HybridOwnPushesTest, ATtlIsSetOnceAWindowPerKey) {
  HybridOwnPushes own;
  EXPECT_TRUE(own.needs_expiry(kCarol, 10'000, 1000));
  own.expiry_set(kCarol, 10'000);
  EXPECT_FALSE(own.needs_expiry(kCarol, 10'500, 1000));
  EXPECT_FALSE(own.needs_expiry(kCarol, 11'000, 1000));
  EXPECT_TRUE(own.needs_expiry(kCarol, 11'001, 1000));
  EXPECT_TRUE(own.needs_expiry(kDave, 10'500, 1000));
}

TEST(HybridOwnPushesTest, ForgettingDropsOldBucketsAndKeysLeftWithNothing) {
  HybridOwnPushes own;
  own.add(kCarol, 1000, 1, 0);
  own.add(kCarol, 5000, 1, 0);
  own.add(kDave, 1000, 1, 0);
  own.expiry_set(kDave, 1000);
  ASSERT_EQ(own.size(), 2U);
  std::size_t forgotten = 0;
  for (std::size_t shard = 0; shard < HybridOwnPushes::kShards; ++shard) {
    forgotten += own.forget(shard, 2000);
  }
  EXPECT_EQ(forgotten, 1U);  // bob; alice keeps her bucket at 5000
  EXPECT_EQ(own.live(kCarol, 0), 1U);
  EXPECT_EQ(own.live(kDave, 0), 0U);
  EXPECT_TRUE(own.needs_expiry(kDave, 1500, 1000));
}

TEST(HybridOwnPushesTest, ThreadsThatPushTheSameKeysSumUp) {
  HybridOwnPushes own;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&own] {
      for (int i = 0; i < 1000; ++i) {
        own.add(kCarol, 1000 * (i % 3), 1, 0);
        (void)own.live(kDave, 0);
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(own.live(kCarol, 0), 4000U);
}

}  // namespace
}  // namespace sluice::store
