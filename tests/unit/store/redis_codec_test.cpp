// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/redis_codec.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace sluice::store {
namespace {

RedisReply integers(std::initializer_list<std::int64_t> values) {
  RedisReply reply;
  reply.type = RedisReply::Type::kArray;
  for (const auto v : values) {
    RedisReply element;
    element.type = RedisReply::Type::kInteger;
    element.integer = v;
    reply.elements.push_back(element);
  }
  return reply;
}

TEST(RedisCodecTest, WindowKeysCarryAHashTagAndNeverTheKey) {
  EXPECT_EQ(window_key("standard", 0x0123456789abcdefULL), "sluice:{standard:0123456789abcdef}");
  EXPECT_EQ(window_key("p", 0), "sluice:{p:0000000000000000}");
  EXPECT_EQ(window_key("p", 0xffULL, ":fleet"), "sluice:{p:00000000000000ff}:fleet");
}

TEST(RedisCodecTest, TheSharedHashKeyIs32HexDigits) {
  const auto hash = hash_from_hex("000102030405060708090a0b0c0d0e0f");
  ASSERT_TRUE(hash.has_value());
  const core::KeyedHash same(
      core::KeyedHash::Key{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  EXPECT_EQ((*hash)("alice"), same("alice"));
  EXPECT_FALSE(hash_from_hex("0001"));
  EXPECT_FALSE(hash_from_hex("zz0102030405060708090a0b0c0d0e0f"));
  EXPECT_FALSE(hash_from_hex(""));
}

TEST(RedisCodecTest, AnAdmittedReplyBecomesADecisionWithTheRemainingAfterIt) {
  const auto d = decision_from(integers({1, 3, 10, 54000, 0}), 0, 1);
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->limit, 10U);
  EXPECT_EQ(d->remaining, 7U);
  EXPECT_EQ(d->reset, std::chrono::milliseconds(54000));
  EXPECT_FALSE(d->unavailable);
}

TEST(RedisCodecTest, ADeniedReplyCarriesRetryAfterAndNothingRemaining) {
  const auto d = decision_from(integers({0, 10, 10, 30000, 12000}), 0, 1);
  ASSERT_TRUE(d.has_value());
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->remaining, 0U);
  EXPECT_EQ(d->retry_after, std::chrono::milliseconds(12000));
}

TEST(RedisCodecTest, AnythingButFiveIntegersIsRejected) {
  EXPECT_FALSE(decision_from(integers({1, 2, 3}), 0, 1));
  RedisReply error;
  error.type = RedisReply::Type::kError;
  error.text = "ERR";
  EXPECT_FALSE(decision_from(error, 0, 1));
  EXPECT_FALSE(state_from(error, 0, 1));
  const auto state = state_from(integers({0, 12, 10, 1000, 0}), 0, 1);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->count, 12U);
  EXPECT_EQ(state->remaining, 0U);  // over an override that was lowered
}

TEST(RedisCodecTest, EachKeyOfABatchReadsItsOwnFiveIntegers) {
  const RedisReply reply = integers({1, 1, 5, 60000, 0, 0, 5, 5, 30000, 2000, 1, 2, 5, 60000, 0});
  const auto first = decision_from(reply, 0, 3);
  const auto denied = decision_from(reply, 1, 3);
  const auto third = state_from(reply, 2, 3);
  ASSERT_TRUE(first && denied && third);
  EXPECT_TRUE(first->allowed);
  EXPECT_EQ(first->remaining, 4U);
  EXPECT_FALSE(denied->allowed);
  EXPECT_EQ(denied->retry_after, std::chrono::milliseconds(2000));
  EXPECT_EQ(third->count, 2U);
  // A reply of another size than the batch is wrong for every key, and no key past the end.
  EXPECT_FALSE(decision_from(reply, 0, 2));
  EXPECT_FALSE(decision_from(reply, 0, 4));
  EXPECT_FALSE(decision_from(reply, 3, 3));
}

TEST(RedisCodecTest, DurationsFromABrokenScriptReplyStayWithinAYear) {
  // INT64_MAX milliseconds overflowed the conversion to the clock's ticks (undefined behaviour;
  // found by the redis_reply fuzz target); a negative one is no time at all.
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const auto d = decision_from(integers({0, 10, 10, kMax, -5}), 0, 1);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->reset, std::chrono::milliseconds(365LL * 24 * 3600 * 1000));
  EXPECT_EQ(d->retry_after, std::chrono::milliseconds(0));
  const auto state = state_from(integers({1, 1, 10, kMax, 0}), 0, 1);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->reset, std::chrono::milliseconds(365LL * 24 * 3600 * 1000));
}

TEST(RedisCodecTest, CountsFromABrokenScriptReplyNeitherOverflowNorWrap) {
  // A count of -1 against a limit of INT64_MAX overflowed `limit - count` (undefined behaviour;
  // found by the redis_reply fuzz target in CI): both are taken within [0, 2^32 - 1] first.
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::uint32_t kMost = std::numeric_limits<std::uint32_t>::max();
  const auto d = decision_from(integers({1, -1, kMax, 0, 0}), 0, 1);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->remaining, kMost);
  const auto low = decision_from(integers({1, 5, -7, 0, 0}), 0, 1);
  ASSERT_TRUE(low.has_value());
  EXPECT_EQ(low->remaining, 0U);
  const auto state = state_from(integers({1, -1, kMax, 0, 0}), 0, 1);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->remaining, kMost);
}

}  // namespace
}  // namespace sluice::store
