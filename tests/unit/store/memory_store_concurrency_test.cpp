// SPDX-License-Identifier: Apache-2.0
// Multi-threaded hammers: the guarantee of docs/behaviour.md "Limits" holds across threads. Time
// moves in steps of one bucket between phases (all threads wait at a barrier), so every admission's
// bucket is known exactly and the assertions are exact, not statistical. Also run under TSan.
#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gateway/store/memory_store.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::store {
namespace {

using namespace std::chrono_literals;

constexpr int kThreads = 8;
constexpr int kPhases = 30;  // 30 buckets of 100 ms: three windows
constexpr int kBuckets = 10;
constexpr int kManyKeys = 2000;

limiter::Policy make_policy(std::string name, std::uint32_t requests) {
  limiter::Policy p;
  p.name = std::move(name);
  p.requests = requests;
  p.window = 1000ms;
  p.buckets = kBuckets;
  return p;
}

/// Asserts the window property on a per-bucket admission series: every N consecutive
/// buckets together admit at most `limit`, and (under saturation) exactly what was left.
void expect_exact_windows(const std::vector<int>& per_phase, int limit, bool saturated,
                          const std::string& what) {
  for (int p = 0; p < static_cast<int>(per_phase.size()); ++p) {
    int previous = 0;  // the N-1 buckets before p
    for (int q = std::max(0, p - kBuckets + 1); q < p; ++q) {
      previous += per_phase[q];
    }
    ASSERT_LE(previous + per_phase[p], limit) << what << " phase " << p;
    if (saturated) {
      ASSERT_EQ(per_phase[p], limit - previous) << what << " phase " << p;
    }
  }
}

TEST(MemoryStoreConcurrencyTest, HotKeyAndManyKeysNeverOverAdmit) {
  testing::ManualClock clock;
  MemoryStore store(clock, {.max_keys = 100000, .shards = 0});
  const PolicyId hot_policy = store.apply(make_policy("hot", 100));
  const PolicyId many_policy = store.apply(make_policy("many", 3));

  // admitted[thread][phase] for the hot key, and [thread][phase][key] for the many keys.
  std::vector<std::vector<int>> hot(kThreads, std::vector<int>(kPhases));
  std::vector<std::vector<std::vector<std::uint8_t>>> many(
      kThreads,
      std::vector<std::vector<std::uint8_t>>(kPhases, std::vector<std::uint8_t>(kManyKeys)));
  std::barrier phase_end(kThreads, [&]() noexcept { clock.advance(100ms); });

  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1000 + t);
      std::uniform_int_distribution<int> pick(0, kManyKeys - 1);
      for (int phase = 0; phase < kPhases; ++phase) {
        for (int i = 0; i < 300; ++i) {
          hot[t][phase] += store.decide_now(hot_policy, "hot-user").allowed ? 1 : 0;
          const int k = pick(rng);
          if (store.decide_now(many_policy, "user-" + std::to_string(k)).allowed) {
            ++many[t][phase][k];
          }
        }
        phase_end.arrive_and_wait();
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }

  std::vector<int> hot_total(kPhases);
  for (int phase = 0; phase < kPhases; ++phase) {
    for (int t = 0; t < kThreads; ++t) {
      hot_total[phase] += hot[t][phase];
    }
  }
  // 2400 offered per bucket against 100 per window: saturated, so exact.
  expect_exact_windows(hot_total, 100, /*saturated=*/true, "hot key");
  EXPECT_EQ(hot_total[0], 100);

  for (int k = 0; k < kManyKeys; ++k) {
    std::vector<int> per_phase(kPhases);
    for (int phase = 0; phase < kPhases; ++phase) {
      for (int t = 0; t < kThreads; ++t) {
        per_phase[phase] += many[t][phase][k];
      }
    }
    expect_exact_windows(per_phase, 3, /*saturated=*/false, "user-" + std::to_string(k));
  }
}

TEST(MemoryStoreConcurrencyTest, LiveRetuningDuringDecisionsNeverExceedsTheHigherLimit) {
  testing::ManualClock clock;  // time stands still: the window never slides
  MemoryStore store(clock, {.max_keys = 10000, .shards = 0});
  const PolicyId id = store.apply(make_policy("standard", 100));
  std::atomic<bool> stop{false};
  std::thread tuner([&] {
    for (int i = 0; !stop.load(); ++i) {
      auto p = make_policy("standard", i % 2 == 0 ? 50 : 100);
      p.buckets = i % 3 == 0 ? 10 : 5;  // reshapes carry counts over
      store.apply(p);
      store.sweep_idle();
    }
  });
  std::vector<std::thread> threads;
  threads.reserve(kThreads - 1);
  std::atomic<int> admitted{0};
  for (int t = 0; t < kThreads - 1; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5000; ++i) {
        admitted += store.decide_now(id, "hot-user").allowed ? 1 : 0;
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  stop = true;
  tuner.join();
  EXPECT_LE(admitted.load(), 100);
  EXPECT_GE(admitted.load(), 50);
}

}  // namespace
}  // namespace sluice::store
