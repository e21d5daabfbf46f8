// SPDX-License-Identifier: Apache-2.0
// One breaker shared by every worker thread: no outcome may be lost or double counted, with
// the window rotating and the breaker being retuned underneath. Also run under TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gateway/breaker/adaptive_breaker.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/scripted_random.hpp"

namespace sluice::breaker {
namespace {

using namespace std::chrono_literals;

TEST(AdaptiveBreakerConcurrencyTest, EveryOutcomeIsCountedExactlyOnce) {
  testing::ManualClock clock;
  testing::ScriptedRandom random;
  random.set_fallback([] { return 0.1; });  // drops whenever p > 0.1
  BreakerParams params;
  params.window = 1000s;  // nothing ages out during the test
  auto breaker = AdaptiveBreaker::create(clock, random, params);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 5000;
  std::atomic<std::uint64_t> successes{0};
  std::atomic<std::uint64_t> failures{0};
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<bool> stop{false};
  std::thread mover([&] {  // rotates buckets and retunes while the workers run
    for (int i = 0; !stop.load(); ++i) {
      clock.advance(1ms);
      BreakerParams p = params;
      p.k = i % 2 == 0 ? 1.5 : 2.0;
      breaker->retune(p);
      (void)breaker->snapshot();
    }
  });
  std::vector<std::thread> workers;
  workers.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto admission = breaker->try_admit();
        if (!admission) {
          ++dropped;
          continue;
        }
        if ((i + t) % 3 == 0) {
          std::move(*admission).succeeded();
          ++successes;
        } else {
          ++failures;  // recorded when the admission goes out of scope
        }
      }
    });
  }
  for (auto& w : workers) {
    w.join();
  }
  stop = true;
  mover.join();
  const auto s = breaker->snapshot();
  EXPECT_EQ(s.requests, successes + failures);
  EXPECT_EQ(s.accepts, successes.load());
  EXPECT_EQ(s.drops, dropped.load());
  EXPECT_EQ(s.requests + s.drops, std::uint64_t{kThreads} * kPerThread);
  // Two thirds failing: p tends to (0.5 R - 5) / (R + 1), past 0.1 after a few dozen requests.
  EXPECT_GT(s.drops, 0U) << "the breaker must have engaged";
}

}  // namespace
}  // namespace sluice::breaker
