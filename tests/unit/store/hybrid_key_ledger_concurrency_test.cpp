// SPDX-License-Identifier: Apache-2.0
// The hybrid ledger under a replica's worker threads at once (docs/distributed.md, "Hybrid
// mode": the threads share it as they share the local store). Built and run under TSan too.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "gateway/store/hybrid_key_ledger.hpp"

namespace sluice::store {
namespace {

TEST(HybridKeyLedgerConcurrencyTest, ThreadsPushingReadingAndForgettingTheSameKeysAgree) {
  HybridKeyLedger ledger;
  const HybridShape shape{1000, 60};  // a 60 s window: the 20 s run stays inside it
  constexpr int kWorkers = 4;
  constexpr int kPasses = 2000;
  constexpr std::uint64_t kLedgerKeys = 64;
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kWorkers; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) {
      }
      for (int i = 0; i < kPasses; ++i) {
        const JournalKey key{0, (static_cast<std::uint64_t>(i) % kLedgerKeys) << 56U | 7U};
        const std::int64_t now = 100'000 + std::int64_t{i} * 10;
        const std::int64_t bucket = shape.bucket_start(now);
        ledger.add(key, bucket, 1, shape.live_from(now));
        (void)ledger.live(key, shape.live_from(now));
        if (ledger.needs_expiry(key, now, shape.window_ms())) {
          ledger.expiry_set(key, now);
        }
        const auto plan = ledger.plan_read(key, shape, bucket, 8);
        if (plan.whole) {
          (void)ledger.absorb_whole(key, shape, {{bucket, 1}}, shape.live_from(now),
                                    shape.bucket_start(now - 2'000));
        } else {
          std::vector<std::int64_t> dead;
          (void)ledger.absorb_part(key, shape, plan, std::vector<std::uint64_t>(plan.fields, 1),
                                   shape.live_from(now), shape.bucket_start(now - 2'000), dead);
        }
        if (i % 97 == t) {
          (void)ledger.forget(static_cast<std::size_t>(i), now - 200'000);  // forgets nothing
        }
      }
    });
  }
  go.store(true);
  for (auto& thread : threads) {
    thread.join();
  }
  // Every push is counted once: nothing was old enough to forget or to leave the window.
  std::uint64_t pushed = 0;
  for (std::uint64_t k = 0; k < kLedgerKeys; ++k) {
    pushed += ledger.live(JournalKey{0, k << 56U | 7U}, 0);
  }
  EXPECT_EQ(pushed, static_cast<std::uint64_t>(kWorkers) * kPasses);
}

}  // namespace
}  // namespace sluice::store
