// SPDX-License-Identifier: Apache-2.0
// ServiceCapacity from several threads at once, as the demo backend's worker threads use it:
// grants handed from one thread to another, claims withdrawn while their grant races them, and
// the capacity changed meanwhile. Also run under the tsan preset (label concurrency).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gateway/demo/service_capacity.hpp"

namespace sluice::demo {
namespace {

constexpr int kThreads = 4;
constexpr int kClaimsPerThread = 5000;

/// One worker: claims a slot, waits for its grant (spinning, as a session waits on its timer)
/// or, every fifth claim, gives up while queued, then gives the slot back. `most` records the
/// largest in-service count a holder saw.
void work(ServiceCapacity& capacity, int seed, std::atomic<std::size_t>& most) {
  for (int i = 0; i < kClaimsPerThread; ++i) {
    auto granted = std::make_shared<std::atomic<bool>>(false);
    std::optional<SlotClaim> claim(
        capacity.claim([granted] { granted->store(true, std::memory_order_release); }));
    if (!claim->holds_slot()) {
      if ((i + seed) % 5 == 0) {
        claim.reset();  // the client left: withdrawn, or given back if the grant raced it
        continue;
      }
      while (!granted->load(std::memory_order_acquire)) {
        std::this_thread::yield();
      }
      claim->granted();
    }
    const auto in_service = capacity.load().in_service;
    auto seen = most.load();
    while (in_service > seen && !most.compare_exchange_weak(seen, in_service)) {
    }
    for (int k = 0; k < 4; ++k) {
      std::this_thread::yield();  // holds the slot a moment, so that the others queue
    }
  }
}

TEST(ServiceCapacityConcurrencyTest, NeverServesMoreThanTheCapacityAndLeaksNoSlot) {
  ServiceCapacity capacity(3);
  std::atomic<std::size_t> most{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&capacity, &most, t] { work(capacity, t, most); });
  }
  for (auto& worker : workers) {
    worker.join();
  }
  EXPECT_LE(most.load(), 3U);
  EXPECT_EQ(capacity.load(), (ServiceLoad{0, 0}));
}

TEST(ServiceCapacityConcurrencyTest, CapacityChangesWhileClaimsComeAndGo) {
  ServiceCapacity capacity(4);
  std::atomic<std::size_t> most{0};
  std::atomic<bool> done{false};
  std::thread changer([&capacity, &done] {
    // Down to 1 and up to 4 again, until the workers are done: every waiter is granted in the
    // end because the capacity never stays below 1.
    for (unsigned c = 1; !done.load(); c = c % 4 + 1) {
      capacity.set_capacity(c);
    }
    capacity.set_capacity(4);
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&capacity, &most, t] { work(capacity, t, most); });
  }
  for (auto& worker : workers) {
    worker.join();
  }
  done.store(true);
  changer.join();
  EXPECT_LE(most.load(), 4U);
  EXPECT_EQ(capacity.load(), (ServiceLoad{0, 0}));
}

}  // namespace
}  // namespace sluice::demo
