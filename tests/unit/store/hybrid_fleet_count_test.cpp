// SPDX-License-Identifier: Apache-2.0
// What a hybrid replica reads back from Redis: buckets named by their start on Redis' clock, the
// fleet's count in the live ones, the fields of the ones that left (docs/distributed.md,
// "Hybrid mode").
#include "gateway/store/hybrid_fleet_count.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace sluice::store {
namespace {

RedisReply text(std::string s) {
  RedisReply r;
  r.type = RedisReply::Type::kString;
  r.text = std::move(s);
  return r;
}

RedisReply hash(const std::vector<std::pair<std::string, std::string>>& fields) {
  RedisReply r;
  r.type = RedisReply::Type::kArray;
  for (const auto& [field, value] : fields) {
    r.elements.push_back(text(field));
    r.elements.push_back(text(value));
  }
  return r;
}

TEST(HybridFleetCountTest, BucketsAreNamedByTheirStartAndTheWindowByItsOldestLiveBucket) {
  const HybridShape shape{1000, 10};
  EXPECT_EQ(shape.bucket_start(1'700'000'012'345), 1'700'000'012'000);
  EXPECT_EQ(shape.bucket_start(1'700'000'012'000), 1'700'000'012'000);
  EXPECT_EQ(shape.live_from(1'700'000'012'345), 1'700'000'003'000);  // ten buckets live
  EXPECT_EQ(shape.window_ms(), 10'000);
  const HybridShape one{1, 1};  // the smallest: a bucket of 1 ms, alone in its window
  EXPECT_EQ(one.bucket_start(7), 7);
  EXPECT_EQ(one.live_from(7), 7);
}

TEST(HybridFleetCountTest, OnlyLiveBucketsCountAndTheOnesThatLeftAreNamedForDeletion) {
  const auto count = read_fleet_count(
      hash({{"1000", "4"}, {"2000", "3"}, {"3000", "2"}, {"900", "5"}}), /*live_from=*/2000);
  ASSERT_TRUE(count);
  EXPECT_EQ(count->live, 5U);  // 3 + 2
  EXPECT_EQ(count->dead, (std::vector<std::string>{"1000", "900"}));
}

TEST(HybridFleetCountTest, AFieldFromAnotherShapeCountsByItsStart) {
  // Written under 500 ms buckets, read under 1 s ones: each by where it starts.
  const auto count = read_fleet_count(hash({{"1500", "1"}, {"2500", "2"}}), 2000);
  ASSERT_TRUE(count);
  EXPECT_EQ(count->live, 2U);
  EXPECT_EQ(count->dead, std::vector<std::string>{"1500"});
}

TEST(HybridFleetCountTest, AMissingHashIsNoRequestAndAnythingElseIsNotAHash) {
  const auto empty = read_fleet_count(hash({}), 0);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->live, 0U);
  EXPECT_TRUE(empty->dead.empty());
  RedisReply error;
  error.type = RedisReply::Type::kError;
  error.text = "WRONGTYPE Operation against a key holding the wrong kind of value";
  EXPECT_FALSE(read_fleet_count(error, 0));
  RedisReply odd = hash({{"1000", "1"}});
  odd.elements.pop_back();
  EXPECT_FALSE(read_fleet_count(odd, 0));
}

TEST(HybridFleetCountTest, FieldsThatNameNoBucketAreLeftAlone) {
  const auto count =
      read_fleet_count(hash({{"g", "1000:10"}, {"2000", "x"}, {"2000x", "4"}, {"3000", "6"}}), 0);
  ASSERT_TRUE(count);
  EXPECT_EQ(count->live, 6U);
  EXPECT_TRUE(count->dead.empty());
}

}  // namespace
}  // namespace sluice::store
