// SPDX-License-Identifier: Apache-2.0
#include "gateway/core/rolling_window.hpp"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

#include "tests/support/manual_clock.hpp"

namespace sluice::core {
namespace {

using namespace std::chrono_literals;
using testing::ManualClock;

constexpr std::size_t kBuckets = 10;
constexpr Duration kWidth = 100ms;

class RollingWindowTest : public ::testing::Test {
 protected:
  // ManualClock starts at 24 h: a multiple of 100 ms, so the test starts on a bucket boundary.
  ManualClock clock_;
  RollingWindow<std::uint64_t> window_{clock_, kBuckets, kWidth};

  /// Adds `value` to each of `count` consecutive buckets, starting in the current one.
  void fill(std::size_t count, std::uint64_t value) {
    for (std::size_t i = 0; i < count; ++i) {
      window_.add(value);
      clock_.advance(kWidth);
    }
  }
};

TEST_F(RollingWindowTest, StartsEmpty) {
  EXPECT_EQ(window_.total(), 0U);
  EXPECT_EQ(window_.total_completed(), 0U);
}

TEST_F(RollingWindowTest, SumsAllBucketsOfTheWindow) {
  fill(kBuckets - 1, 1);
  window_.add(5);
  EXPECT_EQ(window_.total(), kBuckets - 1 + 5);
}

TEST_F(RollingWindowTest, ExcludesTheStillFillingBucketOnRequest) {
  fill(3, 2);  // three complete buckets
  window_.add(7);
  EXPECT_EQ(window_.total(), 13U);
  EXPECT_EQ(window_.total_completed(), 6U);
}

TEST_F(RollingWindowTest, WrapsAroundTheRingKeepingTheLastNBuckets) {
  // 2N + 3 buckets holding 1, 2, 3, ...: the window holds the last N of them.
  for (std::uint64_t v = 1; v <= 2 * kBuckets + 3; ++v) {
    window_.add(v);
    clock_.advance(kWidth);
  }
  clock_.advance(-kWidth);  // back inside the bucket holding 2N + 3
  std::uint64_t expected = 0;
  for (std::uint64_t v = kBuckets + 4; v <= 2 * kBuckets + 3; ++v) {
    expected += v;
  }
  EXPECT_EQ(window_.total(), expected);
}

TEST_F(RollingWindowTest, BucketBoundaryIsExact) {
  window_.add(1);  // bucket 0
  clock_.advance(kWidth - 1ns);
  window_.add(1);  // still bucket 0: its last nanosecond
  EXPECT_EQ(window_.advanced().head_bucket(), 2U);
  clock_.advance(1ns);  // exactly W after the start: bucket 1
  window_.add(1);
  EXPECT_EQ(window_.advanced().head_bucket(), 1U);
  EXPECT_EQ(window_.total(), 3U);
}

TEST_F(RollingWindowTest, CountLeavesExactlyOneWindowAfterItsBucketStarted) {
  window_.add(1);
  clock_.advance(kWidth * kBuckets - 1ns);
  EXPECT_EQ(window_.total(), 1U) << "bucket 0 is still the oldest bucket of the window";
  clock_.advance(1ns);
  EXPECT_EQ(window_.total(), 0U) << "a full window after bucket 0 began, it is gone";
}

// A jump of `steps` buckets from a full window keeps the N - steps newest buckets.
class RollingWindowJumpTest : public RollingWindowTest,
                              public ::testing::WithParamInterface<std::size_t> {};

TEST_P(RollingWindowJumpTest, ClearsEveryBucketTheJumpSkipped) {
  const std::size_t steps = GetParam();
  // Bucket i (0 = oldest) holds 2^i, so the surviving set is visible in the sum.
  for (std::size_t i = 0; i < kBuckets; ++i) {
    window_.add(std::uint64_t{1} << i);
    if (i + 1 < kBuckets) {
      clock_.advance(kWidth);
    }
  }
  ASSERT_EQ(window_.total(), (std::uint64_t{1} << kBuckets) - 1);
  clock_.advance(kWidth * static_cast<std::int64_t>(steps));
  std::uint64_t expected = 0;
  for (std::size_t i = steps; i < kBuckets; ++i) {
    expected += std::uint64_t{1} << i;
  }
  EXPECT_EQ(window_.total(), expected);
  window_.add(1000);  // the ring still works after the jump
  EXPECT_EQ(window_.total(), expected + 1000);
  EXPECT_EQ(window_.advanced().head_bucket(), 1000U);
}

INSTANTIATE_TEST_SUITE_P(Jumps, RollingWindowJumpTest,
                         ::testing::Values(1, kBuckets - 1, kBuckets, kBuckets + 1, 3 * kBuckets));

TEST_F(RollingWindowTest, SurvivesALongIdlePeriod) {
  fill(kBuckets, 3);
  clock_.advance(std::chrono::hours(24 * 30));
  EXPECT_EQ(window_.total(), 0U);
  window_.add(4);
  EXPECT_EQ(window_.total(), 4U);
}

TEST_F(RollingWindowTest, StaysOnTheBucketGridWhenCreatedMidBucket) {
  clock_.advance(37ms);
  RollingWindow<std::uint64_t> w(clock_, kBuckets, kWidth);
  EXPECT_EQ(w.advanced().head_start().time_since_epoch() % kWidth, Duration::zero());
  w.add(1);
  clock_.advance(63ms - 1ns);  // up to the last nanosecond of the grid bucket
  w.add(1);
  EXPECT_EQ(w.advanced().head_bucket(), 2U);
  clock_.advance(1ns);
  EXPECT_EQ(w.advanced().head_bucket(), 0U);
}

TEST_F(RollingWindowTest, AnOlderClockSampleCountsAsTheHeadBucket) {
  std::array<std::uint64_t, kBuckets> slots{};
  RingState<std::uint64_t> state;
  RingRef<std::uint64_t> ring(state, slots, kWidth);
  ring.reset(clock_.now() + 5 * kWidth);
  ring.advance(clock_.now());  // a sample from before the head bucket
  ring.add(1);
  EXPECT_EQ(ring.head_bucket(), 1U);
  EXPECT_EQ(ring.head_start(), clock_.now() + 5 * kWidth);
}

TEST_F(RollingWindowTest, ReshapeCarriesTheTotalIntoTheNewCurrentBucket) {
  fill(4, 5);  // 20 in the window
  window_.reshape(4, 250ms);
  EXPECT_EQ(window_.bucket_count(), 4U);
  EXPECT_EQ(window_.total(), 20U);
  EXPECT_EQ(window_.total_completed(), 0U) << "everything sits in the new current bucket";
  clock_.advance(4 * 250ms);
  EXPECT_EQ(window_.total(), 0U) << "and it ages out one new window later";
}

struct Pair {
  std::uint32_t a = 0;
  std::uint32_t b = 0;
  Pair& operator+=(const Pair& o) {
    a += o.a;
    b += o.b;
    return *this;
  }
  Pair& operator-=(const Pair& o) {
    a -= o.a;
    b -= o.b;
    return *this;
  }
};

TEST(RollingWindowStructTest, KeepsARunningTotalOfAStructBucket) {
  ManualClock clock;
  RollingWindow<Pair> w(clock, 4, 250ms);
  w.add({1, 1});
  clock.advance(250ms);
  w.add({1, 0});
  EXPECT_EQ(w.total().a, 2U);
  EXPECT_EQ(w.total().b, 1U);
  clock.advance(750ms);  // the first bucket leaves
  EXPECT_EQ(w.total().a, 1U);
  EXPECT_EQ(w.total().b, 0U);
}

TEST(RingRefTest, WalksBucketsFromTheOldestAndKeepsTheTotalExact) {
  ManualClock clock;
  std::array<std::uint32_t, 4> slots{};
  RingState<std::uint32_t> state;
  RingRef<std::uint32_t> ring(state, slots, 100ms);
  ring.reset(clock.now());
  for (std::uint32_t v : {1U, 0U, 3U, 4U}) {
    ring.advance(clock.now());
    ring.add(v);
    clock.advance(100ms);
  }
  clock.advance(-100ms);
  EXPECT_EQ(ring.from_oldest(0), 1U);
  EXPECT_EQ(ring.from_oldest(3), 4U);
  EXPECT_EQ(ring.start_from_oldest(0), clock.now() - 300ms);
  EXPECT_EQ(ring.start_from_oldest(3), clock.now());
  EXPECT_EQ(ring.find_from_oldest([](std::uint32_t c) { return c >= 3; }), 2U);
  EXPECT_EQ(ring.find_from_oldest([](std::uint32_t c) { return c > 9; }), 4U);
  ring.set_from_oldest(1, 10);
  EXPECT_EQ(ring.total(), 18U);
  EXPECT_EQ(ring.end(), clock.now() + 100ms);
}

}  // namespace
}  // namespace sluice::core
