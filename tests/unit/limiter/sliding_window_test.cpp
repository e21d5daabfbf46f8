// SPDX-License-Identifier: Apache-2.0
#include "gateway/limiter/sliding_window.hpp"

#include <gtest/gtest.h>

#include <array>
#include <chrono>

#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;

// A policy of 10 requests per 1 s in 10 buckets of 100 ms.
class SlidingWindowTest : public ::testing::Test {
 protected:
  testing::ManualClock clock_;  // starts on a bucket boundary
  std::array<std::uint32_t, 10> slots_{};
  core::RingState<std::uint32_t> state_;

  CountRing ring() { return {state_, slots_, 100ms}; }
  LimitDecision decide(std::uint32_t limit) { return limiter::decide(ring(), limit, clock_.now()); }

  void SetUp() override { ring().reset(clock_.now()); }
};

TEST_F(SlidingWindowTest, AdmitsExactlyTheLimitWithRemainingCountingDown) {
  for (std::uint32_t i = 0; i < 10; ++i) {
    const LimitDecision d = decide(10);
    ASSERT_TRUE(d.allowed) << i;
    EXPECT_EQ(d.remaining, 9 - i) << "remaining is counted after this request";
    EXPECT_EQ(d.limit, 10U);
    EXPECT_EQ(d.retry_after, core::Duration::zero());
  }
  const LimitDecision denied = decide(10);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.remaining, 0U);
}

TEST_F(SlidingWindowTest, CountsOnlyAdmittedRequests) {
  for (int i = 0; i < 10; ++i) {
    decide(10);
  }
  for (int i = 0; i < 50; ++i) {
    EXPECT_FALSE(decide(10).allowed);
  }
  EXPECT_EQ(ring().total(), 10U) << "denied requests must not extend the lock-out";
  clock_.advance(1s);
  EXPECT_TRUE(decide(10).allowed) << "one window later the allowance is back";
}

TEST_F(SlidingWindowTest, ResetIsWhenTheOldestCountedBucketLeaves) {
  clock_.advance(30ms);
  EXPECT_EQ(decide(10).reset, 970ms) << "bucket [0, 100ms) leaves the window at 1 s";
  clock_.advance(250ms);  // now at 280 ms, in bucket [200, 300)
  EXPECT_EQ(decide(10).reset, 720ms) << "still the first bucket's count that leaves first";
}

TEST_F(SlidingWindowTest, RetryAfterIsWhenEnoughCountsHaveLeft) {
  for (int i = 0; i < 4; ++i) {
    decide(10);  // 4 in bucket 0
  }
  clock_.advance(300ms);
  for (int i = 0; i < 6; ++i) {
    decide(10);  // 6 in bucket 3
  }
  clock_.advance(50ms);  // at 350 ms
  const LimitDecision d = decide(10);
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, 650ms) << "bucket 0 (4 counts) leaves at 1 s: one slot frees up";
  EXPECT_EQ(d.reset, 650ms);
  clock_.advance(650ms - 1ns);
  EXPECT_FALSE(decide(10).allowed) << "one nanosecond early";
  clock_.advance(1ns);
  EXPECT_TRUE(decide(10).allowed) << "exactly at retry_after";
}

TEST_F(SlidingWindowTest, RetryAfterWalksPastBucketsThatFreeTooLittle) {
  decide(3);  // 1 in bucket 0
  clock_.advance(100ms);
  decide(3);  // 1 in bucket 1
  clock_.advance(100ms);
  decide(3);  // 1 in bucket 2
  // Lowered to 2: of three counts two must leave before one more fits, so the answer is
  // when bucket 1 leaves (1.1 s), not bucket 0 (1 s).
  const LimitDecision d = decide(2);
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, 900ms);
}

TEST_F(SlidingWindowTest, ALoweredLimitDeniesAtOnceWithNothingRemaining) {
  for (int i = 0; i < 8; ++i) {
    decide(10);
  }
  const LimitDecision d = decide(5);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0U);
  EXPECT_EQ(d.limit, 5U);
}

TEST_F(SlidingWindowTest, ZeroLimitBlocksAndSuggestsAWholeWindow) {
  const LimitDecision d = decide(0);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, 1s);
  EXPECT_EQ(d.reset, core::Duration::zero()) << "nothing is counted";
}

TEST_F(SlidingWindowTest, InspectCountsNothing) {
  decide(10);
  decide(10);
  clock_.advance(120ms);
  const KeyState s = inspect(ring(), 10, clock_.now());
  EXPECT_EQ(s.count, 2U);
  EXPECT_EQ(s.remaining, 8U);
  EXPECT_EQ(s.limit, 10U);
  EXPECT_EQ(s.reset, 880ms);
  EXPECT_EQ(inspect(ring(), 10, clock_.now()).count, 2U);
  EXPECT_EQ(inspect(ring(), 1, clock_.now()).remaining, 0U);
}

}  // namespace
}  // namespace sluice::limiter
