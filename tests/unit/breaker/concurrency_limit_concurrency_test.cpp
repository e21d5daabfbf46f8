// SPDX-License-Identifier: Apache-2.0
// One concurrency limit shared by every worker thread: in flight never goes past the published
// limit by more than the threads racing for it, every place is given back exactly once, and the
// controller steps and retunes underneath. Also run under TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gateway/breaker/concurrency_limit.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::breaker {
namespace {

using namespace std::chrono_literals;

TEST(ConcurrencyLimitConcurrencyTest, EveryPlaceIsGivenBackExactlyOnce) {
  testing::ManualClock clock;
  ConcurrencyParams params;
  params.min = 2;
  params.max = 6;
  auto limit = ConcurrencyLimit::create(clock, params);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 5000;
  std::atomic<std::uint64_t> admitted{0};
  std::atomic<std::uint64_t> refused{0};
  std::atomic<std::int64_t> holding{0};  // places held by the workers right now
  std::atomic<std::int64_t> most{0};
  std::atomic<bool> stop{false};
  std::thread mover([&] {  // moves time (controller steps, probes) and retunes meanwhile
    for (int i = 0; !stop.load(); ++i) {
      clock.advance(3ms);
      ConcurrencyParams p = params;
      p.max = i % 2 == 0 ? 6 : 5;
      limit->retune(p);
      (void)limit->snapshot();
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto slot = limit->try_acquire();
        if (!slot) {
          refused.fetch_add(1);
          continue;
        }
        admitted.fetch_add(1);
        const std::int64_t now = holding.fetch_add(1) + 1;
        std::int64_t seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        holding.fetch_sub(1);
        if ((i + t) % 3 != 0) {
          std::move(*slot).measured(10ms, clock.now());
        }  // else: given back without a measure when `slot` goes
      }
    });
  }
  for (auto& w : workers) {
    w.join();
  }
  stop.store(true);
  mover.join();
  const auto s = limit->snapshot();
  EXPECT_EQ(admitted.load() + refused.load(), std::uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(s.rejections, refused.load());
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_LE(most.load(), 6) << "a place was taken past the highest limit";
  EXPECT_GT(admitted.load(), 0U);
}

}  // namespace
}  // namespace sluice::breaker
