// SPDX-License-Identifier: Apache-2.0
// The heavy-hitter sketches (gateway/insight/space_saving.hpp, top_users.hpp): exact while the
// users fit, the Space-Saving bounds under skewed (Zipf) traffic, the sliding window's rollover,
// the drain of the workers' rings into the policies' sketches.
#include "gateway/insight/top_users.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "gateway/insight/space_saving.hpp"
#include "gateway/insight/user_sample_ring.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::insight {
namespace {

using namespace std::chrono_literals;
using testing::ManualClock;

/// A Zipf stream (s = 1) over `users` keys 1..users: key k occurs floor(scale / k) times, in an
/// order shuffled by a fixed seed (the same stream every run). Keys are spread over 64 bits, as
/// keyed hashes are, by multiplying by an odd constant.
struct ZipfStream {
  std::vector<std::uint64_t> order;
  std::map<std::uint64_t, std::uint64_t> truth;
};

std::uint64_t spread_key(std::uint64_t k) {
  return k * 0x2545f4914f6cdd1dULL;
}

ZipfStream zipf_stream(std::uint64_t users, std::uint64_t scale) {
  ZipfStream z;
  for (std::uint64_t k = 1; k <= users; ++k) {
    const std::uint64_t n = std::max<std::uint64_t>(scale / k, 1);
    z.truth[spread_key(k)] = n;
    z.order.insert(z.order.end(), n, spread_key(k));
  }
  std::mt19937_64 seeded(20261126);  // fixed: deterministic
  std::shuffle(z.order.begin(), z.order.end(), seeded);
  return z;
}

TEST(SpaceSavingTest, CountsExactlyWhileFewerKeysThanCapacity) {
  SpaceSaving s(8);
  for (std::uint64_t k = 1; k <= 5; ++k) {
    for (std::uint64_t i = 0; i < k * 3; ++i) {
      s.add(k, i < k);
    }
  }
  EXPECT_EQ(s.min_count(), 0U);
  EXPECT_EQ(s.total(), 45U);
  ASSERT_EQ(s.entries().size(), 5U);
  for (std::uint64_t k = 1; k <= 5; ++k) {
    const auto* e = s.find(k);
    ASSERT_NE(e, nullptr) << k;
    EXPECT_EQ(e->count, k * 3);
    EXPECT_EQ(e->limited, k);
    EXPECT_EQ(e->error, 0U);
  }
  EXPECT_EQ(s.find(6), nullptr);
}

TEST(SpaceSavingTest, ANewKeyReplacesTheSmallestAndInheritsItsCount) {
  SpaceSaving s(2);
  s.add(1, false);
  s.add(1, false);
  s.add(1, false);
  s.add(2, true);
  EXPECT_EQ(s.min_count(), 1U);  // full: the smallest count is the bound
  s.add(3, true);
  EXPECT_EQ(s.find(2), nullptr);
  const auto* three = s.find(3);
  ASSERT_NE(three, nullptr);
  EXPECT_EQ(three->count, 2U);  // the 1 it inherited, plus its own
  EXPECT_EQ(three->error, 1U);
  EXPECT_EQ(three->limited, 1U);  // only its own: the inherited entry's limited is not its
  EXPECT_EQ(s.find(1)->count, 3U);
  EXPECT_EQ(s.min_count(), 2U);
}

TEST(SpaceSavingTest, ClearForgetsEveryKey) {
  SpaceSaving s(4);
  for (std::uint64_t k = 0; k < 10; ++k) {
    s.add(k, false);
  }
  s.clear();
  EXPECT_EQ(s.total(), 0U);
  EXPECT_TRUE(s.entries().empty());
  for (std::uint64_t k = 0; k < 10; ++k) {
    EXPECT_EQ(s.find(k), nullptr);
  }
  s.add(7, false);
  EXPECT_EQ(s.find(7)->count, 1U);
}

// The guarantees of Metwally et al. (Lemmas 3.3 and 3.4, Theorem 3.5), checked against the
// stream's true counts after thousands of replacements (which also shuffle the index).
TEST(SpaceSavingTest, BoundsHoldUnderZipfTraffic) {
  const ZipfStream z = zipf_stream(5000, 20000);
  SpaceSaving s(64);
  for (const std::uint64_t key : z.order) {
    s.add(key, false);
  }
  ASSERT_EQ(s.entries().size(), 64U);
  EXPECT_LE(s.min_count(), s.total() / 64);
  std::uint64_t sum = 0;
  for (const auto& e : s.entries()) {
    EXPECT_EQ(s.find(e.key), &e);  // the index finds every entry where it is
    const std::uint64_t truth = z.truth.at(e.key);
    EXPECT_LE(truth, e.count);
    EXPECT_LE(e.count - e.error, truth);
    EXPECT_LE(e.error, s.min_count());
    sum += e.count;
  }
  EXPECT_EQ(sum, s.total());  // counts never get lost, only moved
  for (const auto& [key, truth] : z.truth) {
    if (truth > s.min_count()) {
      EXPECT_NE(s.find(key), nullptr) << "a key above the bound is always monitored";
    }
  }
}

// Uniform traffic: every entry ties with many others, and nearly every occurrence replaces one.
TEST(SpaceSavingTest, BoundsHoldWhenEveryKeyTies) {
  SpaceSaving s(64);
  std::map<std::uint64_t, std::uint64_t> truth;
  for (std::uint64_t i = 0; i < 50000; ++i) {
    const std::uint64_t key = spread_key(i * 7919 % 2000);
    s.add(key, false);
    ++truth[key];
  }
  EXPECT_EQ(s.min_count(), 50000U / 64);  // a perfect spread: every count is the minimum
  std::uint64_t sum = 0;
  for (const auto& e : s.entries()) {
    EXPECT_EQ(s.find(e.key), &e);
    EXPECT_LE(truth.at(e.key), e.count);
    EXPECT_LE(e.count - e.error, truth.at(e.key));
    sum += e.count;
  }
  EXPECT_EQ(sum, s.total());
}

class TopUsersTest : public ::testing::Test {
 protected:
  ManualClock clock_;
  TopUsers top_{clock_, 60s};
};

TEST_F(TopUsersTest, CountsExactlyWhenFewerUsersThanCapacity) {
  for (std::uint64_t u = 1; u <= 20; ++u) {
    for (std::uint64_t i = 0; i < u; ++i) {
      top_.count(spread_key(u), i % 2 == 0, clock_.now());
    }
  }
  const TopAnswer answer = top_.top(100);
  EXPECT_EQ(answer.error_bound, 0U);
  EXPECT_EQ(answer.tracked, 20U);
  ASSERT_EQ(answer.users.size(), 20U);
  for (std::size_t i = 0; i < answer.users.size(); ++i) {
    const std::uint64_t u = 20 - i;  // heaviest first
    EXPECT_EQ(answer.users[i].user, spread_key(u));
    EXPECT_EQ(answer.users[i].count, u);
    EXPECT_EQ(answer.users[i].limited, (u + 1) / 2);
  }
  EXPECT_EQ(top_.top(3).users.size(), 3U);
  EXPECT_EQ(top_.top(3).tracked, 20U);
}

TEST_F(TopUsersTest, PutsTheHeavyUserFirstUnderZipfTraffic) {
  const ZipfStream z = zipf_stream(10000, 50000);
  for (const std::uint64_t key : z.order) {
    top_.count(key, false, clock_.now());
  }
  const TopAnswer answer = top_.top(10);
  ASSERT_EQ(answer.users.size(), 10U);
  EXPECT_LE(answer.tracked, TopUsers::kMaxEntries / 2);  // the previous window is empty
  EXPECT_GT(answer.error_bound, 0U);
  for (std::size_t i = 0; i < answer.users.size(); ++i) {
    const std::uint64_t truth = z.truth.at(answer.users[i].user);
    EXPECT_LE(truth, answer.users[i].count);
    EXPECT_LE(answer.users[i].count, truth + answer.error_bound);
  }
  // Estimates are within [truth, truth + bound]: gaps wider than the bound keep the order.
  ASSERT_LT(answer.error_bound, z.truth.at(spread_key(3)) - z.truth.at(spread_key(4)));
  for (std::uint64_t k = 1; k <= 3; ++k) {
    EXPECT_EQ(answer.users[k - 1].user, spread_key(k)) << "rank " << k;
  }
}

TEST_F(TopUsersTest, TheBoundCoversEveryUserLeftOut) {
  const ZipfStream z = zipf_stream(10000, 50000);
  for (const std::uint64_t key : z.order) {
    top_.count(key, false, clock_.now());
  }
  const TopAnswer answer = top_.top(TopUsers::kMaxEntries);
  std::map<std::uint64_t, std::uint64_t> shown;
  for (const auto& u : answer.users) {
    shown[u.user] = u.count;
  }
  for (const auto& [key, truth] : z.truth) {
    if (!shown.contains(key)) {
      EXPECT_LE(truth, answer.error_bound) << "an untracked user is under the bound";
    }
  }
}

TEST_F(TopUsersTest, TheLastWindowFadesOutAcrossTheNext) {
  for (int i = 0; i < 100; ++i) {
    top_.count(1, i < 40, clock_.now());
  }
  clock_.advance(60s - 1ns);  // still the same window
  EXPECT_EQ(top_.top(1).users.at(0).count, 100U);
  clock_.advance(1ns);  // the next window: the last one counts in full at its start
  top_.count(2, false, clock_.now());
  auto answer = top_.top(2);
  ASSERT_EQ(answer.users.size(), 2U);
  EXPECT_EQ(answer.users[0].count, 100U);
  EXPECT_EQ(answer.users[0].limited, 40U);
  EXPECT_EQ(answer.users[1].count, 1U);
  clock_.advance(15s);  // a quarter through: three quarters of the last window remain
  answer = top_.top(2);
  EXPECT_EQ(answer.users[0].count, 75U);
  EXPECT_EQ(answer.users[0].limited, 30U);
  EXPECT_EQ(answer.users[1].count, 1U);
  clock_.advance(45s);  // two windows on: user 1's requests are out, user 2's fade
  answer = top_.top(2);
  ASSERT_EQ(answer.users.size(), 1U);
  EXPECT_EQ(answer.users[0].user, 2U);
  EXPECT_EQ(answer.users[0].count, 1U);
  clock_.advance(120s);  // two quiet windows: nothing is left
  EXPECT_EQ(top_.top(2).tracked, 0U);
}

TEST_F(TopUsersTest, ARequestSeenAfterALaterRollCountsInTheCurrentWindow) {
  const core::TimePoint started = clock_.now() + 60s - 1ns;
  clock_.advance(60s);
  top_.count(3, false, clock_.now());  // rolls the windows
  top_.count(3, false, started);       // another worker's request, drained after, began before
  EXPECT_EQ(top_.top(1).users.at(0).count, 2U);
}

TEST(TopUsersRegistryTest, KeepsASketchWhileItsWindowStays) {
  ManualClock clock;
  TopUsersRegistry registry(clock, 1);
  const std::uint32_t standard = registry.sync("standard", 60s);
  EXPECT_NE(standard, 0U);  // 0 means "not counted" in a snapshot
  ASSERT_TRUE(registry.ring(0).push({.user = 9, .at = clock.now(), .sketch = standard}));
  EXPECT_EQ(registry.drain(), 1U);
  EXPECT_EQ(registry.sync("standard", 60s), standard);
  EXPECT_EQ(registry.find("standard")->top(1).tracked, 1U);
  const std::uint32_t resized = registry.sync("standard", 10s);
  EXPECT_NE(resized, standard);
  EXPECT_EQ(registry.find("standard")->top(1).tracked, 0U);  // other windows' counts are gone
  EXPECT_EQ(registry.find("standard")->window(), 10s);
  registry.remove("standard");
  EXPECT_EQ(registry.find("standard"), nullptr);
  EXPECT_EQ(registry.find("other"), nullptr);
  EXPECT_NE(registry.sync("standard", 10s), resized);  // ids are never reused
}

TEST(TopUsersRegistryTest, DrainsEveryWorkersRingIntoItsPolicysSketch) {
  ManualClock clock;
  TopUsersRegistry registry(clock, 3);
  const std::uint32_t a = registry.sync("a", 60s);
  const std::uint32_t b = registry.sync("b", 60s);
  const std::uint32_t gone = registry.sync("gone", 60s);
  for (std::size_t worker = 0; worker < 3; ++worker) {
    for (std::uint64_t i = 0; i <= worker; ++i) {
      ASSERT_TRUE(registry.ring(worker).push({.user = 7, .at = clock.now(), .sketch = a}));
    }
    ASSERT_TRUE(
        registry.ring(worker).push({.user = 8, .at = clock.now(), .sketch = b, .limited = true}));
    ASSERT_TRUE(registry.ring(worker).push({.user = 9, .at = clock.now(), .sketch = gone}));
  }
  EXPECT_EQ(registry.find("a")->top(1).tracked, 0U);  // nothing counted before a drain
  registry.remove("gone");                            // its queued samples are dropped at the drain
  EXPECT_EQ(registry.drain(), 12U);
  EXPECT_EQ(registry.drain(), 0U);
  const TopAnswer in_a = registry.find("a")->top(5);
  ASSERT_EQ(in_a.users.size(), 1U);
  EXPECT_EQ(in_a.users[0].user, 7U);
  EXPECT_EQ(in_a.users[0].count, 6U);  // 1 + 2 + 3
  const TopAnswer in_b = registry.find("b")->top(5);
  ASSERT_EQ(in_b.users.size(), 1U);
  EXPECT_EQ(in_b.users[0].count, 3U);
  EXPECT_EQ(in_b.users[0].limited, 3U);
  EXPECT_EQ(registry.dropped(), 0U);
}

}  // namespace
}  // namespace sluice::insight
