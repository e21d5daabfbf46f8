// SPDX-License-Identifier: Apache-2.0
// Property tests of the sliding-window decision: randomised (but seeded, so every run is the
// same) arrival times over many windows, for several policy shapes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "gateway/limiter/sliding_window.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::limiter {
namespace {

using namespace std::chrono_literals;

struct Shape {
  core::Duration window;
  std::uint32_t buckets;
  std::uint32_t limit;
};

// GoogleTest finds this hook by its exact name.
void PrintTo(const Shape& s, std::ostream* os) {  // NOLINT(readability-identifier-naming)
  *os << std::chrono::duration_cast<std::chrono::milliseconds>(s.window).count() << "ms/"
      << s.buckets << "x" << s.limit;
}

/// Runs `arrivals` (sorted) through one key's ring, dense and sparse side by side (the memory
/// store keeps keys sparse): the two must decide alike. Returns the admission times.
std::vector<core::TimePoint> admitted_times(const Shape& shape,
                                            const std::vector<core::TimePoint>& arrivals) {
  std::vector<std::uint32_t> slots(shape.buckets);
  core::RingState<std::uint32_t> state;
  CountRing ring(state, slots, shape.window / shape.buckets);
  ring.reset(arrivals.front());
  SparseRingState sparse_state{};
  std::size_t block_bytes = 0;
  SparseCountRing sparse(sparse_state, shape.buckets, shape.window / shape.buckets, &block_bytes);
  sparse.reset(arrivals.front());
  std::vector<core::TimePoint> admitted;
  std::size_t differences = 0;
  for (const core::TimePoint t : arrivals) {
    const LimitDecision d = decide(ring, shape.limit, t);
    const LimitDecision s = decide(sparse, shape.limit, t);
    differences += d.allowed != s.allowed || d.remaining != s.remaining || d.reset != s.reset ||
                   d.retry_after != s.retry_after;
    if (d.allowed) {
      admitted.push_back(t);
    }
  }
  EXPECT_EQ(differences, 0U);
  sparse.release();
  EXPECT_EQ(block_bytes, 0U);
  return admitted;
}

/// The most admissions inside any closed interval [t, t + length].
std::size_t max_in_any_interval(const std::vector<core::TimePoint>& times, core::Duration length) {
  std::size_t best = 0;
  std::size_t end = 0;
  for (std::size_t begin = 0; begin < times.size(); ++begin) {
    while (end < times.size() && times[end] <= times[begin] + length) {
      ++end;
    }
    best = std::max(best, end - begin);
  }
  return best;
}

class SlidingWindowPropertyTest : public ::testing::TestWithParam<Shape> {};

TEST_P(SlidingWindowPropertyTest, NoIntervalOfWindowMinusOneBucketExceedsTheLimit) {
  const Shape shape = GetParam();
  std::mt19937_64 rng(0x5111ce);
  // Bursts and lulls: exponential gaps whose mean changes every few hundred arrivals, from
  // far above the limit's rate to far below it, over about 200 windows.
  const auto mean_gap_at_limit = shape.window / shape.limit;
  std::vector<core::TimePoint> arrivals;
  core::TimePoint t = testing::ManualClock().now() + 1234567ns;  // off the bucket grid
  const core::TimePoint end = t + shape.window * 200;
  double factor = 1.0;
  while (t < end) {
    if (arrivals.size() % 300 == 0) {
      factor = std::uniform_real_distribution<double>(0.02, 3.0)(rng);
    }
    std::exponential_distribution<double> gap(1.0);
    t += std::chrono::duration_cast<core::Duration>(mean_gap_at_limit * factor * gap(rng));
    arrivals.push_back(t);
  }
  const auto admitted = admitted_times(shape, arrivals);
  const core::Duration guarded = shape.window - shape.window / shape.buckets;
  EXPECT_LE(max_in_any_interval(admitted, guarded), shape.limit);
  // A sanity check that the traffic really pushed against the limit (with one bucket the
  // guarded interval is empty: a fixed window promises nothing between its edges).
  if (shape.buckets > 1) {
    EXPECT_GE(max_in_any_interval(admitted, guarded), shape.limit * 9 / 10);
  }
  EXPECT_LT(admitted.size(), arrivals.size());
}

TEST_P(SlidingWindowPropertyTest, SteadyOverloadConvergesToTheLimitRate) {
  const Shape shape = GetParam();
  std::mt19937_64 rng(42);
  // Poisson arrivals at five times the limit's rate for 100 windows.
  std::exponential_distribution<double> gap(1.0);
  const auto mean_gap = shape.window / (5.0 * shape.limit);
  std::vector<core::TimePoint> arrivals;
  core::TimePoint t = testing::ManualClock().now();
  const core::TimePoint end = t + shape.window * 100;
  while (t < end) {
    t += std::chrono::duration_cast<core::Duration>(mean_gap * gap(rng));
    arrivals.push_back(t);
  }
  const auto admitted = admitted_times(shape, arrivals);
  // Skip the first 10 windows, then count per window of steady state.
  const core::TimePoint from = arrivals.front() + shape.window * 10;
  const auto steady =
      std::count_if(admitted.begin(), admitted.end(), [&](core::TimePoint a) { return a >= from; });
  const double per_window = static_cast<double>(steady) / 90.0;
  EXPECT_NEAR(per_window, shape.limit, shape.limit * 0.03 + 1.0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SlidingWindowPropertyTest,
                         ::testing::Values(Shape{1s, 10, 10}, Shape{1s, 10, 100},
                                           Shape{60s, 60, 100}, Shape{60s, 12, 5},
                                           Shape{10s, 1, 20}, Shape{2s, 40, 1000},
                                           Shape{300ms, 3, 7}));

}  // namespace
}  // namespace sluice::limiter
