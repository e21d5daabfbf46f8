// SPDX-License-Identifier: Apache-2.0
#include "gateway/breaker/adaptive_breaker.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "tests/support/manual_clock.hpp"
#include "tests/support/scripted_random.hpp"

namespace sluice::breaker {
namespace {

using namespace std::chrono_literals;

// The documented defaults (docs/behaviour.md "Configuration"): k 1.5, protection 5, 10 s window in
// 40 buckets of 250 ms.
class AdaptiveBreakerTest : public ::testing::Test {
 protected:
  testing::ManualClock clock_;
  testing::ScriptedRandom random_;
  std::shared_ptr<AdaptiveBreaker> breaker_ = AdaptiveBreaker::create(clock_, random_, {});

  void record(int successes, int failures) {
    for (int i = 0; i < successes; ++i) {
      breaker_->record(Outcome::kSuccess);
    }
    for (int i = 0; i < failures; ++i) {
      breaker_->record(Outcome::kFailure);
    }
  }
  double p() { return breaker_->snapshot().drop_probability; }
};

TEST_F(AdaptiveBreakerTest, AppliesTheFormulaToTheWindow) {
  record(20, 100);  // requests 120, accepts 20
  const auto s = breaker_->snapshot();
  EXPECT_EQ(s.requests, 120U);
  EXPECT_EQ(s.accepts, 20U);
  EXPECT_DOUBLE_EQ(s.drop_probability, (120 - 5 - 1.5 * 20) / 121.0);
}

TEST_F(AdaptiveBreakerTest, IsZeroWhileAcceptsOutweighFailures) {
  record(100, 50);  // 150 - 5 - 150 < 0
  EXPECT_EQ(p(), 0.0);
}

TEST_F(AdaptiveBreakerTest, ProtectionKeepsLowTrafficFromTripping) {
  record(0, 5);  // five failures in a row at low traffic: (5 - 5) / 6 = 0
  EXPECT_EQ(p(), 0.0);
  for (int i = 0; i < 20; ++i) {
    auto admission = breaker_->try_admit();
    ASSERT_TRUE(admission.has_value());
    std::move(*admission).abandon();
  }
  EXPECT_EQ(random_.taken(), 0U) << "no draw is needed while p is 0";
  record(0, 1);  // the sixth failure: (6 - 5) / 7
  EXPECT_DOUBLE_EQ(p(), 1.0 / 7.0);
}

TEST_F(AdaptiveBreakerTest, AShadowBreakerAdmitsWhatItWouldDropAndCountsIt) {
  BreakerParams params;
  params.shadow = true;
  breaker_->retune(params);
  record(0, 10);       // p = 5 / 11, published as in enforce mode
  random_.push(0.45);  // would drop
  random_.push(0.46);  // would admit
  auto would_drop = breaker_->try_admit();
  ASSERT_TRUE(would_drop.has_value());
  EXPECT_TRUE(would_drop->shadow_dropped());
  auto admitted = breaker_->try_admit();
  ASSERT_TRUE(admitted.has_value());
  EXPECT_FALSE(admitted->shadow_dropped());
  auto s = breaker_->snapshot();
  EXPECT_EQ(s.drops, 0U);
  EXPECT_EQ(s.shadow_drops, 1U);
  EXPECT_TRUE(s.shadow);
  EXPECT_DOUBLE_EQ(s.drop_probability, 5.0 / 11.0);
  EXPECT_GT(breaker_->published_drop_probability(), 0.0);
  EXPECT_FALSE(breaker_->shedding()) << "retries go on under a shadow breaker";
  std::move(*would_drop).failed();  // both went upstream: both are in the window
  std::move(*admitted).failed();
  EXPECT_EQ(breaker_->snapshot().requests, 12U);

  params.shadow = false;  // switched live: the same window now drops
  breaker_->retune(params);
  EXPECT_TRUE(breaker_->shedding());
  random_.push(0.01);
  EXPECT_FALSE(breaker_->try_admit().has_value());
  s = breaker_->snapshot();
  EXPECT_EQ(s.drops, 1U);
  EXPECT_EQ(s.shadow_drops, 1U);
}

TEST_F(AdaptiveBreakerTest, DropsWhenTheDrawFallsBelowPAndCountsDropsBesideTheWindow) {
  record(0, 10);       // p = 5 / 11
  random_.push(0.45);  // < 5/11 = 0.4545...: dropped
  random_.push(0.46);  // >= p: admitted
  EXPECT_FALSE(breaker_->try_admit().has_value());
  auto admitted = breaker_->try_admit();
  ASSERT_TRUE(admitted.has_value());
  const auto s = breaker_->snapshot();
  EXPECT_EQ(s.drops, 1U);
  EXPECT_EQ(s.requests, 10U) << "the drop did not enter the window, the admission not yet";
  std::move(*admitted).succeeded();
  EXPECT_EQ(breaker_->snapshot().requests, 11U);
  EXPECT_EQ(breaker_->snapshot().accepts, 1U);
}

TEST_F(AdaptiveBreakerTest, AdmissionRecordsAFailureUnlessToldOtherwise) {
  { auto a = breaker_->try_admit(); }  // dropped on the floor: a failure
  {
    auto a = breaker_->try_admit();
    std::move(*a).succeeded();
  }
  {
    auto a = breaker_->try_admit();
    std::move(*a).failed();
  }
  {
    auto a = breaker_->try_admit();
    std::move(*a).abandon();  // never sent upstream: not in the window
  }
  {
    auto a = breaker_->try_admit();
    auto moved = std::move(*a);  // only the new owner records
    std::move(moved).succeeded();
  }
  const auto s = breaker_->snapshot();
  EXPECT_EQ(s.requests, 4U);
  EXPECT_EQ(s.accepts, 2U);
}

TEST_F(AdaptiveBreakerTest, ForgetsOutcomesOneWindowLater) {
  record(0, 100);
  clock_.advance(10s - 1ns);
  EXPECT_GT(p(), 0.9);
  clock_.advance(1ns);
  EXPECT_EQ(p(), 0.0);
  EXPECT_EQ(breaker_->snapshot().requests, 0U);
}

// Offered load of 40 requests per 250 ms bucket (160/s) against a dead backend, then healed.
// The draws come from a seeded generator: the same run every time.
TEST_F(AdaptiveBreakerTest, TotalOutageLetsATrickleProbeAndRecoveryClosesWithinAWindow) {
  std::mt19937_64 rng(2024);
  random_.set_fallback([&] { return std::uniform_real_distribution<double>(0, 1)(rng); });
  bool healthy = false;
  // Runs `buckets` buckets of traffic; returns how many requests went upstream per window.
  auto run = [&](int buckets) {
    int passed = 0;
    for (int b = 0; b < buckets; ++b) {
      for (int i = 0; i < 40; ++i) {
        clock_.advance(6250us);  // 40 arrivals spread over the bucket
        if (auto a = breaker_->try_admit()) {
          ++passed;
          if (healthy) {
            std::move(*a).succeeded();
          }  // else: destroyed unresolved, a failure
        }
      }
    }
    return passed;
  };
  std::vector<int> passed_per_window;
  for (int w = 0; w < 6; ++w) {
    passed_per_window.push_back(run(40));
    EXPECT_GT(passed_per_window.back(), 0) << "a trickle still probes the backend, window " << w;
  }
  EXPECT_GT(p(), 0.9) << "after a minute of total outage almost everything is dropped";
  // About sqrt((protection + 1) x offered per window) = sqrt(6 x 1600) ~ 98 per window pass.
  EXPECT_LT(passed_per_window.back(), 200);
  EXPECT_GT(breaker_->snapshot().drops, 6 * 1600U - 6 * 200U);

  healthy = true;
  run(4);  // one second of healing: the trickle succeeds
  EXPECT_GT(p(), 0.0) << "the failures are still in the window";
  run(36);  // one whole window after healing began
  EXPECT_EQ(p(), 0.0) << "closed within one window of the backend healing";
  const auto drops = breaker_->snapshot().drops;
  run(40);
  EXPECT_EQ(breaker_->snapshot().drops, drops) << "nothing is dropped once healthy";
}

TEST_F(AdaptiveBreakerTest, RetuningTakesEffectImmediately) {
  record(20, 100);
  EXPECT_GT(p(), 0.0);
  BreakerParams tolerant;
  tolerant.k = 6.0;  // 120 - 5 - 6 * 20 < 0
  breaker_->retune(tolerant);
  EXPECT_EQ(p(), 0.0);
  BreakerParams forgiving;
  forgiving.protection = 200;
  breaker_->retune(forgiving);
  EXPECT_EQ(p(), 0.0);
  breaker_->retune(BreakerParams{});
  EXPECT_DOUBLE_EQ(p(), 85.0 / 121.0);
  EXPECT_EQ(breaker_->params(), BreakerParams{});
}

TEST_F(AdaptiveBreakerTest, DisabledBreakerNeverDropsButKeepsCounting) {
  record(0, 100);
  BreakerParams off;
  off.enabled = false;
  breaker_->retune(off);
  EXPECT_EQ(p(), 0.0);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(breaker_->try_admit().has_value());
  }
  EXPECT_EQ(random_.taken(), 0U);
  EXPECT_EQ(breaker_->snapshot().requests, 150U) << "the window still learns";
  breaker_->retune(BreakerParams{});
  EXPECT_GT(p(), 0.9) << "re-enabled with a window that knows the backend is down";
}

TEST_F(AdaptiveBreakerTest, ReshapingTheWindowCarriesCountsOver) {
  record(10, 40);
  BreakerParams shorter;
  shorter.window = 2s;
  shorter.buckets = 8;
  breaker_->retune(shorter);
  auto s = breaker_->snapshot();
  EXPECT_EQ(s.requests, 50U);
  EXPECT_EQ(s.accepts, 10U);
  clock_.advance(2s);
  EXPECT_EQ(breaker_->snapshot().requests, 0U) << "carried counts age out over the new window";
}

TEST_F(AdaptiveBreakerTest, AdmissionSeesEveryRecordAndRetuneAtOnce) {
  ASSERT_TRUE(breaker_->try_admit().has_value());  // 1 failure recorded: p still 0
  record(0, 20);                                   // p = (21 - 5) / 22
  random_.push(0.7);  // < 16/22 = 0.727: dropped, with the p this record published
  EXPECT_FALSE(breaker_->try_admit().has_value());
  BreakerParams off;
  off.enabled = false;
  breaker_->retune(off);
  const auto draws = random_.taken();
  ASSERT_TRUE(breaker_->try_admit().has_value()) << "disabled at once";
  EXPECT_EQ(random_.taken(), draws);
}

TEST_F(AdaptiveBreakerTest, AdmissionNoticesTheWindowSlidingWithoutAnyRecord) {
  record(0, 100);
  random_.push(0.5);
  EXPECT_FALSE(breaker_->try_admit().has_value());
  clock_.advance(10s);  // every failure has left the window; nothing was recorded since
  const auto draws = random_.taken();
  auto admission = breaker_->try_admit();
  ASSERT_TRUE(admission.has_value());
  std::move(*admission).abandon();
  EXPECT_EQ(random_.taken(), draws) << "p is 0 again: no draw";
}

TEST_F(AdaptiveBreakerTest, AcceptsTheCallersTimestamps) {
  const core::TimePoint t0 = clock_.now();
  auto a = breaker_->try_admit(t0);
  ASSERT_TRUE(a.has_value());
  std::move(*a).failed(t0 + 9750ms);  // completed in the window's last bucket
  auto b = breaker_->try_admit(t0);
  ASSERT_TRUE(b.has_value());
  std::move(*b).succeeded(t0 + 9750ms);
  clock_.set(t0 + 10s);  // the first bucket left; the outcomes sit in the last one
  EXPECT_EQ(breaker_->snapshot().requests, 2U);
  EXPECT_EQ(breaker_->snapshot().accepts, 1U);
  clock_.set(t0 + 9750ms + 10s);
  EXPECT_EQ(breaker_->snapshot().requests, 0U);
}

TEST_F(AdaptiveBreakerTest, RejectsImpossibleParameters) {
  BreakerParams bad;
  bad.buckets = 0;
  EXPECT_THROW(AdaptiveBreaker::create(clock_, random_, bad), std::invalid_argument);
  bad = BreakerParams{};
  bad.window = 0ms;
  EXPECT_THROW(breaker_->retune(bad), std::invalid_argument);
  bad = BreakerParams{};
  bad.k = 0.5;
  EXPECT_THROW(breaker_->retune(bad), std::invalid_argument);
  EXPECT_EQ(breaker_->params(), BreakerParams{}) << "a rejected retune changes nothing";
}

}  // namespace
}  // namespace sluice::breaker
