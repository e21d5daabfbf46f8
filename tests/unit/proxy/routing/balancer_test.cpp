// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/routing/balancer.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace sluice::proxy {
namespace {

constexpr std::size_t kNone = 99;
const core::TimePoint kNow = core::TimePoint(std::chrono::hours(1));

std::shared_ptr<health::EndpointHealth> endpoints(std::size_t n) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < n; ++i) {
    labels.push_back("10.0.0." + std::to_string(i + 1) + ":80");
  }
  return std::make_shared<health::EndpointHealth>(std::move(labels));
}

Balancer balancer(config::Balance policy, std::size_t n) {
  return {policy, endpoints(n), "b"};
}

std::map<std::size_t, int> spread(const Balancer& b, int picks) {
  BalanceCursor cursor;
  std::map<std::size_t, int> counts;
  for (int i = 0; i < picks; ++i) {
    ++counts[b.pick(cursor, kNone, kNow)];
  }
  return counts;
}

TEST(BalancerTest, RoundRobinCyclesThroughEveryEndpoint) {
  const Balancer b = balancer(config::Balance::kRoundRobin, 3);
  BalanceCursor cursor;
  std::vector<std::size_t> picks;
  for (int i = 0; i < 6; ++i) {
    picks.push_back(b.pick(cursor, kNone, kNow));
  }
  EXPECT_EQ(picks, (std::vector<std::size_t>{0, 1, 2, 0, 1, 2}));
}

TEST(BalancerTest, AvoidsTheEndpointThatJustFailed) {
  for (const auto policy :
       {config::Balance::kRoundRobin, config::Balance::kRandom, config::Balance::kLeastRequest}) {
    const Balancer b = balancer(policy, 3);
    BalanceCursor cursor;
    for (int i = 0; i < 100; ++i) {
      EXPECT_NE(b.pick(cursor, 1, kNow), 1U);
    }
    const Balancer two = balancer(policy, 2);
    EXPECT_EQ(two.pick(cursor, 0, kNow), 1U);
  }
}

TEST(BalancerTest, RandomSpreadsOverAllEndpoints) {
  const auto counts = spread(balancer(config::Balance::kRandom, 4), 4000);
  ASSERT_EQ(counts.size(), 4U);
  for (const auto& [endpoint, n] : counts) {
    EXPECT_GT(n, 800) << endpoint;
  }
}

TEST(BalancerTest, LeastRequestPrefersTheLessLoadedOfTwoChoices) {
  const Balancer b = balancer(config::Balance::kLeastRequest, 2);
  BalanceCursor cursor;
  auto busy = b.track(0);
  auto busier = b.track(0);
  EXPECT_EQ(b.in_flight(0), 2U);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(b.pick(cursor, kNone, kNow), 1U) << "with two endpoints both are always compared";
  }
}

TEST(BalancerTest, InFlightGuardsCountWhileAliveAndMove) {
  const Balancer b = balancer(config::Balance::kLeastRequest, 1);
  {
    auto a = b.track(0);
    auto moved = std::move(a);
    EXPECT_EQ(b.in_flight(0), 1U);
  }
  EXPECT_EQ(b.in_flight(0), 0U);
}

// docs/endpoint-health.md "Balancing": only pickable endpoints, each with an equal share.
TEST(BalancerTest, EveryPolicyPicksOnlyPickableEndpointsAndStaysFair) {
  for (const auto policy :
       {config::Balance::kRoundRobin, config::Balance::kRandom, config::Balance::kLeastRequest}) {
    const Balancer b = balancer(policy, 4);
    ASSERT_TRUE(b.health().set_draining("10.0.0.2:80", true));
    const auto counts = spread(b, 3000);
    EXPECT_FALSE(counts.contains(1)) << config::to_string(policy);
    ASSERT_EQ(counts.size(), 3U) << config::to_string(policy);
    for (const auto& [endpoint, n] : counts) {
      // Round robin is exact; the random ones within a few percent of 1000.
      EXPECT_NEAR(n, 1000, 120) << config::to_string(policy) << " endpoint " << endpoint;
    }
  }
}

TEST(BalancerTest, RoundRobinStaysExactWhenTheSetChanges) {
  const Balancer b = balancer(config::Balance::kRoundRobin, 3);
  ASSERT_TRUE(b.health().set_draining("10.0.0.1:80", true));
  auto counts = spread(b, 600);
  EXPECT_EQ(counts[1], 300);
  EXPECT_EQ(counts[2], 300);
  ASSERT_TRUE(b.health().set_draining("10.0.0.1:80", false));
  counts = spread(b, 600);
  EXPECT_EQ(counts[0], 200);
  EXPECT_EQ(counts[1], 200);
  EXPECT_EQ(counts[2], 200);
}

TEST(BalancerTest, PanicUsesEveryEndpointWhenNoneIsPickable) {
  const Balancer b = balancer(config::Balance::kRoundRobin, 2);
  ASSERT_TRUE(b.health().set_draining("10.0.0.1:80", true));
  ASSERT_TRUE(b.health().set_draining("10.0.0.2:80", true));
  const auto counts = spread(b, 100);
  EXPECT_EQ(counts.at(0), 50);
  EXPECT_EQ(counts.at(1), 50);
  EXPECT_EQ(b.health().panics(), 100U);
}

TEST(BalancerTest, ARetryGoesBackToTheOnlyPickableEndpointRatherThanASickOne) {
  const Balancer b = balancer(config::Balance::kRandom, 3);
  ASSERT_TRUE(b.health().set_draining("10.0.0.1:80", true));
  ASSERT_TRUE(b.health().set_draining("10.0.0.3:80", true));
  BalanceCursor cursor;
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(b.pick(cursor, 1, kNow), 1U);
  }
  EXPECT_EQ(b.health().panics(), 0U);
}

}  // namespace
}  // namespace sluice::proxy
