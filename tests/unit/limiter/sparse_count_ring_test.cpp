// SPDX-License-Identifier: Apache-2.0
// The sparse ring against the dense one it replaces in the memory store: the same decisions for
// any arrivals (including clock samples that run backwards and idle gaps beyond the window),
// memory that follows the counted buckets rather than the bucket count, and a block that is
// given back.
#include "gateway/limiter/sparse_count_ring.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <ostream>
#include <random>
#include <vector>

#include "gateway/limiter/sliding_window.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;

/// A dense and a sparse ring of one shape, driven together.
class RingPair {
 public:
  RingPair(std::uint32_t buckets, core::Duration width, core::TimePoint start)
      : slots_(buckets),
        dense_(dense_state_, slots_, width),
        sparse_(sparse_state_, buckets, width, &block_bytes_) {
    dense_.reset(start);
    sparse_.reset(start);
  }
  ~RingPair() { sparse_.release(); }
  RingPair(const RingPair&) = delete;
  RingPair& operator=(const RingPair&) = delete;

  CountRing& dense() { return dense_; }
  SparseCountRing& sparse() { return sparse_; }
  [[nodiscard]] std::size_t block_bytes() const { return block_bytes_; }

 private:
  std::vector<std::uint32_t> slots_;
  core::RingState<std::uint32_t> dense_state_;
  CountRing dense_;
  SparseRingState sparse_state_{};
  std::size_t block_bytes_ = 0;
  SparseCountRing sparse_;
};

void expect_same(const LimitDecision& d, const LimitDecision& s) {
  EXPECT_EQ(d.allowed, s.allowed);
  EXPECT_EQ(d.remaining, s.remaining);
  EXPECT_EQ(d.reset, s.reset);
  EXPECT_EQ(d.retry_after, s.retry_after);
}

TEST(SparseCountRingTest, IsFortyBytesWhateverTheBucketCount) {
  EXPECT_EQ(sizeof(SparseRingState), 40U);
  SparseRingState zero{};
  EXPECT_EQ(zero.total, 0U);
  EXPECT_EQ(zero.live, 0U);
  EXPECT_EQ(zero.form, SparseRingState::kInline);
}

TEST(SparseCountRingTest, MoreBucketsMoveToAListThenABlockAndExpiryBringsThemBack) {
  const core::TimePoint t0 = testing::ManualClock().now();
  RingPair rings(60, 1s, t0);
  const auto step = [&](int second) {
    expect_same(decide(rings.dense(), 100, t0 + second * 1s),
                decide(rings.sparse(), 100, t0 + second * 1s));
  };
  for (int second = 0; second < 6; ++second) {
    step(second);
  }
  EXPECT_EQ(rings.sparse().counted_buckets(), 6U);
  EXPECT_FALSE(rings.sparse().in_list() || rings.sparse().in_block());
  EXPECT_EQ(rings.block_bytes(), 0U);  // six buckets fit inline
  step(6);
  EXPECT_TRUE(rings.sparse().in_list());
  EXPECT_EQ(rings.block_bytes(), SparseCountRing::list_bytes_for(16));
  for (int second = 7; second < 20; ++second) {
    step(second);
  }
  EXPECT_TRUE(rings.sparse().in_list());
  EXPECT_EQ(rings.block_bytes(), SparseCountRing::list_bytes_for(32));
  for (int second = 20; second < 40; ++second) {
    step(second);
  }
  // 40 buckets: a list of 64 pairs would cost more than 60 counts: the block.
  EXPECT_EQ(rings.sparse().counted_buckets(), 40U);
  EXPECT_TRUE(rings.sparse().in_block());
  EXPECT_EQ(rings.block_bytes(), SparseCountRing::block_bytes_for(60));
  EXPECT_EQ(rings.sparse().total(), 40U);
  // 98 s on, the buckets of seconds 0..38 have left the window; the key goes back inline.
  step(98);
  EXPECT_EQ(rings.sparse().counted_buckets(), 2U);
  EXPECT_FALSE(rings.sparse().in_list() || rings.sparse().in_block());
  EXPECT_EQ(rings.block_bytes(), 0U);
  EXPECT_EQ(rings.sparse().total(), rings.dense().total());
  // A list also goes back inline once three buckets or fewer are left.
  for (int second = 99; second < 110; ++second) {
    step(second);
  }
  EXPECT_TRUE(rings.sparse().in_list());
  step(166);
  EXPECT_FALSE(rings.sparse().in_list());
  EXPECT_EQ(rings.block_bytes(), 0U);
}

TEST(SparseCountRingTest, ACountBeyondSixteenBitsMovesToTheBlockAndStaysExact) {
  const core::TimePoint t0 = testing::ManualClock().now();
  RingPair rings(10, 100ms, t0);
  for (int i = 0; i < 70'000; ++i) {
    ASSERT_TRUE(decide(rings.sparse(), 100'000, t0).allowed);
    decide(rings.dense(), 100'000, t0);
  }
  EXPECT_TRUE(rings.sparse().in_block());
  EXPECT_EQ(rings.sparse().counted_buckets(), 1U);
  // One bucket on: still one bucket counted, but too many for 16 bits: the block stays.
  expect_same(decide(rings.dense(), 100'000, t0 + 100ms),
              decide(rings.sparse(), 100'000, t0 + 100ms));
  EXPECT_TRUE(rings.sparse().in_block());
  EXPECT_EQ(rings.sparse().total(), 70'001U);
  for (int i = 0; i < 30'000; ++i) {
    expect_same(decide(rings.dense(), 100'000, t0 + 200ms),
                decide(rings.sparse(), 100'000, t0 + 200ms));
  }
  expect_same(decide(rings.dense(), 100'000, t0 + 1100ms),
              decide(rings.sparse(), 100'000, t0 + 1100ms));
  EXPECT_EQ(rings.sparse().total(), rings.dense().total());
}

TEST(SparseCountRingTest, RebuildsADenseRingOldestFirst) {
  const core::TimePoint t0 = testing::ManualClock().now();
  RingPair rings(12, 1s, t0);
  for (int i = 0; i < 12; ++i) {
    for (int n = 0; n <= i % 3; ++n) {
      decide(rings.dense(), 1000, t0 + i * 1s);
    }
  }
  rings.dense().advance(t0 + 11s);
  rings.sparse().advance(t0 + 11s);
  for (std::size_t i = 0; i < rings.dense().size(); ++i) {
    rings.sparse().add_at_age(static_cast<std::uint32_t>(11 - i), rings.dense().from_oldest(i));
  }
  EXPECT_EQ(rings.sparse().total(), rings.dense().total());
  EXPECT_EQ(rings.sparse().counted_buckets(), 12U);
  for (int later = 11; later < 30; ++later) {
    expect_same(decide(rings.dense(), 30, t0 + later * 1s),
                decide(rings.sparse(), 30, t0 + later * 1s));
  }
}

struct SparseShape {
  std::uint32_t buckets;
  core::Duration width;
  std::uint32_t limit;
};

// GoogleTest finds this hook by its exact name.
void PrintTo(const SparseShape& s, std::ostream* os) {  // NOLINT(readability-identifier-naming)
  *os << s.buckets << "x" << std::chrono::duration_cast<std::chrono::milliseconds>(s.width).count()
      << "ms/" << s.limit;
}

class SparseCountRingEquivalenceTest : public ::testing::TestWithParam<SparseShape> {};

TEST_P(SparseCountRingEquivalenceTest, DecidesAndInspectsExactlyAsTheDenseRing) {
  const SparseShape shape = GetParam();
  std::mt19937_64 rng(0xb0c4e7 + shape.buckets);
  core::TimePoint t = testing::ManualClock().now() + 777ns;
  RingPair rings(shape.buckets, shape.width, t);
  const core::Duration window = shape.width * shape.buckets;
  std::size_t decisions = 0;
  std::size_t most_buckets = 0;
  for (int i = 0; i < 40'000; ++i) {
    // Mostly small steps (a few per bucket), some gaps of several buckets, a few beyond the
    // whole window, and some samples slightly in the past (another thread's earlier reading).
    const auto kind = std::uniform_int_distribution<int>(0, 99)(rng);
    if (kind < 80) {
      t += std::uniform_int_distribution<core::Duration::rep>(0, shape.width.count() / 3)(rng) *
           core::Duration(1);
    } else if (kind < 95) {
      t += shape.width * std::uniform_int_distribution<int>(1, 8)(rng);
    } else if (kind < 97) {
      t += window + shape.width * std::uniform_int_distribution<int>(0, 3)(rng);
    }
    const core::TimePoint at = kind >= 97 ? t - shape.width / 2 : t;
    if (kind % 7 == 0) {
      const KeyState d = inspect(rings.dense(), shape.limit, at);
      const KeyState s = inspect(rings.sparse(), shape.limit, at);
      EXPECT_EQ(d.count, s.count);
      EXPECT_EQ(d.remaining, s.remaining);
      EXPECT_EQ(d.reset, s.reset);
    }
    const LimitDecision d = decide(rings.dense(), shape.limit, at);
    const LimitDecision s = decide(rings.sparse(), shape.limit, at);
    ASSERT_EQ(d.allowed, s.allowed) << "decision " << i;
    ASSERT_EQ(d.remaining, s.remaining) << "decision " << i;
    ASSERT_EQ(d.reset, s.reset) << "decision " << i;
    ASSERT_EQ(d.retry_after, s.retry_after) << "decision " << i;
    ASSERT_EQ(rings.dense().total(), rings.sparse().total());
    ASSERT_LE(rings.sparse().counted_buckets(), shape.buckets);
    if (rings.sparse().in_block()) {
      ASSERT_EQ(rings.block_bytes(), SparseCountRing::block_bytes_for(shape.buckets));
    } else {
      ASSERT_EQ(rings.block_bytes() == 0, !rings.sparse().in_list());
    }
    most_buckets = std::max(most_buckets, rings.sparse().counted_buckets());
    ++decisions;
  }
  EXPECT_EQ(decisions, 40'000U);
  if (shape.buckets > SparseRingState::kInlinePairs &&
      shape.limit > 2U * SparseRingState::kInlinePairs) {
    EXPECT_GT(most_buckets, std::size_t{SparseRingState::kInlinePairs});  // blocks were tested
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SparseCountRingEquivalenceTest,
                         ::testing::Values(SparseShape{1, 1s, 5}, SparseShape{3, 100ms, 4},
                                           SparseShape{4, 250ms, 9}, SparseShape{10, 100ms, 20},
                                           SparseShape{60, 1s, 100}, SparseShape{60, 1s, 7},
                                           SparseShape{600, 10ms, 2000},
                                           SparseShape{3600, 1s, 50}));

}  // namespace
}  // namespace sluice::limiter
