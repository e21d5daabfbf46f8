// SPDX-License-Identifier: Apache-2.0
#include "gateway/breaker/concurrency_limit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <list>
#include <optional>
#include <random>
#include <vector>

#include "tests/support/manual_clock.hpp"

namespace sluice::breaker {
namespace {

using namespace std::chrono_literals;

/// A backend whose latency grows with its queue (the demo backend's --capacity/--service-ms):
/// `capacity` requests served at once, each taking `service` ± 20 % (a fixed pseudo-random
/// sequence: real service times vary, which keeps the servers from finishing in lockstep
/// waves), the rest waiting in FIFO order; driven by `clients` that each send again as soon as
/// they got an answer (a 503 included), all under the manual clock in 1 ms steps.
class OverloadedBackend {
 public:
  OverloadedBackend(testing::ManualClock& clock, ConcurrencyLimit& limit)
      : clock_(clock), limit_(limit) {}

  std::size_t capacity = 16;
  core::Duration service = 10ms;
  std::size_t clients = 128;

  struct Stats {
    std::uint64_t served = 0;
    std::uint64_t rejected = 0;
    std::vector<core::Duration> latencies;  ///< of served requests, send to answer
    std::uint32_t max_limit = 0;
    std::uint32_t min_limit = ~0U;
  };

  /// Runs `how_long` of simulated time; returns what happened in it.
  Stats run(core::Duration how_long) {
    Stats stats;
    const core::TimePoint end = clock_.now() + how_long;
    while (clock_.now() < end) {
      const core::TimePoint now = clock_.now();
      // Answers due now.
      while (!serving_.empty() && serving_.front().done <= now) {
        Request r = std::move(serving_.front());
        serving_.pop_front();
        stats.latencies.push_back(now - r.sent);
        ++stats.served;
        std::move(*r.slot).measured(now - r.sent, now);
      }
      while (serving_.size() < capacity && !queue_.empty()) {
        Request r = std::move(queue_.front());
        queue_.pop_front();
        start(std::move(r), now);
      }
      // Every idle client sends; a rejection is answered at once and it sends again next ms.
      const std::size_t busy = serving_.size() + queue_.size();
      for (std::size_t i = busy; i < clients; ++i) {
        auto slot = limit_.try_acquire();
        if (!slot) {
          ++stats.rejected;
          continue;
        }
        queue_.push_back({.sent = now, .done = {}, .slot = std::move(slot)});
      }
      while (serving_.size() < capacity && !queue_.empty()) {
        Request r = std::move(queue_.front());
        queue_.pop_front();
        start(std::move(r), now);
      }
      const std::uint32_t l = limit_.snapshot().limit;
      stats.max_limit = std::max(stats.max_limit, l);
      stats.min_limit = std::min(stats.min_limit, l);
      clock_.advance(1ms);
    }
    return stats;
  }

 private:
  struct Request {
    core::TimePoint sent;
    core::TimePoint done;
    std::optional<ConcurrencySlot> slot;
  };
  void start(Request r, core::TimePoint now) {
    const double jitter = 0.8 + 0.4 * std::uniform_real_distribution<double>(0.0, 1.0)(random_);
    r.done = now + std::chrono::duration_cast<core::Duration>(service * jitter);
    // Keep `serving_` ordered by completion.
    const auto at = std::find_if(serving_.begin(), serving_.end(),
                                 [&](const Request& x) { return r.done < x.done; });
    serving_.insert(at, std::move(r));
  }

  testing::ManualClock& clock_;
  ConcurrencyLimit& limit_;
  std::minstd_rand random_{42};
  std::deque<Request> queue_;   ///< waiting for the backend
  std::list<Request> serving_;  ///< in service, by completion time
};

core::Duration percentile(std::vector<core::Duration> values, double q) {
  if (values.empty()) {
    return {};
  }
  const auto k = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

class ConcurrencyLimitTest : public ::testing::Test {
 protected:
  testing::ManualClock clock_;
  std::shared_ptr<ConcurrencyLimit> limit_ = ConcurrencyLimit::create(clock_, {});
  OverloadedBackend backend_{clock_, *limit_};
};

TEST_F(ConcurrencyLimitTest, StartsByProbingAtTheMinimum) {
  const auto s = limit_->snapshot();
  EXPECT_TRUE(s.probing);
  EXPECT_EQ(s.limit, 4U);
  std::vector<ConcurrencySlot> held;
  for (int i = 0; i < 4; ++i) {
    auto slot = limit_->try_acquire();
    ASSERT_TRUE(slot);
    held.push_back(std::move(*slot));
  }
  EXPECT_FALSE(limit_->try_acquire());
  EXPECT_EQ(limit_->snapshot().rejections, 1U);
  EXPECT_EQ(limit_->snapshot().in_flight, 4);
  held.clear();  // given back without a measure
  EXPECT_EQ(limit_->snapshot().in_flight, 0);
  EXPECT_TRUE(limit_->snapshot().probing);
}

TEST_F(ConcurrencyLimitTest, AProbeMeasuresTheMinimumRoundTripAsTheMedian) {
  for (int i = 0; i < 25; ++i) {
    auto slot = limit_->try_acquire();
    ASSERT_TRUE(slot);
    clock_.advance(1ms);
    std::move(*slot).measured(i == 24 ? 500ms : 10ms + std::chrono::microseconds(i), clock_.now());
  }
  const auto s = limit_->snapshot();
  EXPECT_FALSE(s.probing);
  EXPECT_NEAR(s.min_rtt_ms, 10.012, 0.001);  // the outlier does not move the median
}

TEST_F(ConcurrencyLimitTest, ConvergesNearTheCapacityOfABackendThatQueues) {
  backend_.run(5s);  // probe, then find the limit
  const auto stats = backend_.run(10s);
  const auto s = limit_->snapshot();
  // Capacity 1,600/s: goodput of at least 90 % with the latency of a short queue.
  EXPECT_GE(stats.served, 14400U);
  // The fixed point of the control law here: limit 1.1 x 16 + sqrt(17.6) / 2 = 19.7, where
  // the mean latency is 12.3 ms.
  EXPECT_LE(percentile(stats.latencies, 0.99), 16ms);
  EXPECT_GE(s.limit, 16U);
  EXPECT_LE(s.limit, 22U);
  EXPECT_NEAR(s.min_rtt_ms, 10.0, 1.0);
}

TEST_F(ConcurrencyLimitTest, FollowsTheCapacityDownWithinSeconds) {
  backend_.run(5s);
  backend_.capacity = 8;
  backend_.run(2s);
  const auto after = backend_.run(5s);
  EXPECT_LE(after.max_limit, 16U);
  EXPECT_GE(after.served, 3600U);  // 90 % of 800/s
  EXPECT_LE(percentile(after.latencies, 0.99), 20ms);
}

TEST_F(ConcurrencyLimitTest, RecoversAfterTheBackendWasSlowAndNeverGoesBelowTheMinimum) {
  backend_.run(5s);
  backend_.service = 200ms;  // sick: twenty times slower
  const auto sick = backend_.run(5s);
  EXPECT_GE(sick.min_limit, 4U);
  EXPECT_LE(limit_->snapshot().limit, 8U);
  backend_.service = 10ms;
  backend_.run(3s);
  const auto healed = backend_.run(5s);
  EXPECT_GE(healed.served, 7200U);  // back to 90 % of capacity
  EXPECT_GE(limit_->snapshot().limit, 16U);
}

TEST_F(ConcurrencyLimitTest, ProbesAgainEveryInterval) {
  backend_.run(5s);
  EXPECT_FALSE(limit_->snapshot().probing);
  const double before = limit_->snapshot().min_rtt_ms;
  backend_.service = 20ms;  // the backend's own floor moved: only a probe can tell
  backend_.run(30s);
  const auto s = limit_->snapshot();
  EXPECT_NEAR(before, 10.0, 1.0);
  EXPECT_NEAR(s.min_rtt_ms, 20.0, 2.0);
  EXPECT_GE(s.limit, 16U);
}

TEST_F(ConcurrencyLimitTest, ALimitStuckAtTheMinimumMeasuresTheRoundTripAgainAtOnce) {
  backend_.run(5s);
  backend_.service = 40ms;  // a deploy made every call four times slower, for good
  backend_.run(3s);         // far less than the 30 s between periodic probes
  const auto s = limit_->snapshot();
  EXPECT_NEAR(s.min_rtt_ms, 40.0, 4.0);
  EXPECT_GE(s.limit, 16U) << "the limit found the capacity again";
}

TEST_F(ConcurrencyLimitTest, LightTrafficDoesNotRaiseTheLimit) {
  backend_.clients = 2;
  backend_.run(10s);
  EXPECT_LE(limit_->snapshot().limit, 8U);
}

TEST_F(ConcurrencyLimitTest, DisabledAdmitsEverythingAndStillCountsInFlight) {
  ConcurrencyParams params;
  params.enabled = false;
  limit_->retune(params);
  std::vector<ConcurrencySlot> held;
  for (int i = 0; i < 100; ++i) {
    auto slot = limit_->try_acquire();
    ASSERT_TRUE(slot);
    held.push_back(std::move(*slot));
  }
  const auto s = limit_->snapshot();
  EXPECT_EQ(s.limit, 0U);
  EXPECT_EQ(s.in_flight, 100);
  EXPECT_EQ(s.rejections, 0U);
}

TEST_F(ConcurrencyLimitTest, RetuningClampsTheLimitIntoTheNewRange) {
  backend_.run(5s);
  ASSERT_GE(limit_->snapshot().limit, 16U);
  ConcurrencyParams params;
  params.max = 10;
  limit_->retune(params);
  EXPECT_EQ(limit_->snapshot().limit, 10U);
  const auto stats = backend_.run(3s);
  EXPECT_LE(stats.max_limit, 10U);
}

TEST_F(ConcurrencyLimitTest, RejectsBadParameters) {
  ConcurrencyParams params;
  params.min = 10;
  params.max = 5;
  EXPECT_THROW(ConcurrencyLimit::create(clock_, params), std::invalid_argument);
  params.min = 0;
  EXPECT_THROW(ConcurrencyLimit::create(clock_, params), std::invalid_argument);
}

}  // namespace
}  // namespace sluice::breaker
