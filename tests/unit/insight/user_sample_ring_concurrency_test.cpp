// SPDX-License-Identifier: Apache-2.0
// The workers' rings to the heavy-hitter sketches (gateway/insight/user_sample_ring.hpp,
// docs/decisions/0018-heavy-hitters-off-the-data-path.md): refusal when full, wrap-around, and
// the hand-over from one thread to another (label "concurrency": also run under TSan).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "gateway/insight/user_sample_ring.hpp"

namespace sluice::insight {
namespace {

TEST(UserSampleRingTest, RefusesAndCountsWhenFullThenTakesMoreOnceDrained) {
  UserSampleRing ring(4);
  EXPECT_EQ(ring.capacity(), 4U);
  for (std::uint64_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(ring.push({.user = i}));
  }
  EXPECT_FALSE(ring.push({.user = 4}));
  EXPECT_FALSE(ring.push({.user = 5}));
  EXPECT_EQ(ring.dropped(), 2U);
  std::vector<std::uint64_t> seen;
  EXPECT_EQ(ring.drain([&](const UserSample& s) { seen.push_back(s.user); }), 4U);
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{0, 1, 2, 3}));  // oldest first
  for (std::uint64_t i = 6; i < 9; ++i) {                     // wraps around the slots
    EXPECT_TRUE(ring.push({.user = i}));
  }
  seen.clear();
  EXPECT_EQ(ring.drain([&](const UserSample& s) { seen.push_back(s.user); }), 3U);
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{6, 7, 8}));
  EXPECT_EQ(ring.dropped(), 2U);
}

// One producer thread and one consumer thread, as a worker and the control thread: every sample
// arrives once, in order, or is counted as dropped (ThreadSanitizer checks the hand-over).
TEST(UserSampleRingTest, HandsEverySampleFromOneThreadToAnotherInOrder) {
  constexpr std::uint64_t kSamples = 200000;
  UserSampleRing ring(256);
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (std::uint64_t i = 1; i <= kSamples; ++i) {
      (void)ring.push({.user = i, .limited = i % 3 == 0});
    }
    done.store(true, std::memory_order_release);
  });
  std::uint64_t received = 0;
  std::uint64_t last = 0;
  bool ordered = true;
  bool flags_match = true;
  const auto take = [&](const UserSample& s) {
    ordered = ordered && s.user > last;
    flags_match = flags_match && s.limited == (s.user % 3 == 0);
    last = s.user;
    ++received;
  };
  while (!done.load(std::memory_order_acquire)) {
    ring.drain(take);
  }
  ring.drain(take);
  producer.join();
  EXPECT_TRUE(ordered);
  EXPECT_TRUE(flags_match);
  EXPECT_EQ(received + ring.dropped(), kSamples);
  EXPECT_GT(received, 0U);
}

}  // namespace
}  // namespace sluice::insight
