// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/balancer.hpp"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace sluice::proxy {
namespace {

constexpr std::size_t kNone = 99;

TEST(BalancerTest, RoundRobinCyclesThroughEveryEndpoint) {
  const Balancer b(config::Balance::kRoundRobin, 3);
  BalanceCursor cursor;
  std::vector<std::size_t> picks;
  for (int i = 0; i < 6; ++i) {
    picks.push_back(b.pick(cursor, kNone));
  }
  EXPECT_EQ(picks, (std::vector<std::size_t>{0, 1, 2, 0, 1, 2}));
}

TEST(BalancerTest, AvoidsTheEndpointThatJustFailed) {
  for (const auto policy :
       {config::Balance::kRoundRobin, config::Balance::kRandom, config::Balance::kLeastRequest}) {
    const Balancer b(policy, 3);
    BalanceCursor cursor;
    for (int i = 0; i < 100; ++i) {
      EXPECT_NE(b.pick(cursor, 1), 1U);
    }
    const Balancer two(policy, 2);
    EXPECT_EQ(two.pick(cursor, 0), 1U);
  }
}

TEST(BalancerTest, RandomSpreadsOverAllEndpoints) {
  const Balancer b(config::Balance::kRandom, 4);
  BalanceCursor cursor;  // a fixed seed: the same picks every run
  std::map<std::size_t, int> counts;
  for (int i = 0; i < 4000; ++i) {
    ++counts[b.pick(cursor, kNone)];
  }
  ASSERT_EQ(counts.size(), 4U);
  for (const auto& [endpoint, n] : counts) {
    EXPECT_GT(n, 800) << endpoint;
  }
}

TEST(BalancerTest, LeastRequestPrefersTheLessLoadedOfTwoChoices) {
  const Balancer b(config::Balance::kLeastRequest, 2);
  BalanceCursor cursor;
  auto busy = b.track(0);
  auto busier = b.track(0);
  EXPECT_EQ(b.in_flight(0), 2U);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(b.pick(cursor, kNone), 1U) << "with two endpoints both are always compared";
  }
}

TEST(BalancerTest, InFlightGuardsCountWhileAliveAndMove) {
  const Balancer b(config::Balance::kLeastRequest, 1);
  {
    auto a = b.track(0);
    auto moved = std::move(a);
    EXPECT_EQ(b.in_flight(0), 1U);
  }
  EXPECT_EQ(b.in_flight(0), 0U);
}

}  // namespace
}  // namespace sluice::proxy
