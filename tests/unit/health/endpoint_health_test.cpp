// SPDX-License-Identifier: Apache-2.0
#include "gateway/health/endpoint_health.hpp"

#include <gtest/gtest.h>

#include "gateway/health/health_registry.hpp"

namespace sluice::health {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const core::TimePoint kStart = core::TimePoint(std::chrono::hours(1));

config::OutlierConfig outlier(std::uint32_t failures, std::uint32_t max_percent = 100) {
  config::OutlierConfig o;
  o.consecutive_failures = failures;
  o.base_ejection = seconds(30);
  o.max_ejection_percent = max_percent;
  return o;
}

config::HealthCheckConfig check(std::uint32_t healthy, std::uint32_t unhealthy) {
  config::HealthCheckConfig c;
  c.healthy_threshold = healthy;
  c.unhealthy_threshold = unhealthy;
  return c;
}

EndpointHealth three() {
  return EndpointHealth({"a:1", "b:1", "c:1"});
}

void fail(EndpointHealth& h, std::size_t i, int times, core::TimePoint now) {
  for (int k = 0; k < times; ++k) {
    h.record(i, true, now);
  }
}

TEST(EndpointHealthTest, ConsecutiveFailuresEjectForTheBaseTimeThenTheEndpointIsBack) {
  EndpointHealth h = three();
  h.configure(outlier(3), std::nullopt);
  EXPECT_FALSE(h.record(0, true, kStart));
  EXPECT_FALSE(h.record(0, true, kStart));
  EXPECT_TRUE(h.record(0, true, kStart)) << "the third failure in a row ejects";
  EXPECT_EQ(h.state(0, kStart), EndpointState::kEjected);
  EXPECT_FALSE(h.pickable(0, kStart + seconds(29)));
  EXPECT_TRUE(h.any_out());
  EXPECT_TRUE(h.pickable(0, kStart + seconds(30)));
  EXPECT_EQ(h.end_ejections(kStart + seconds(30)), std::vector<std::size_t>{0});
  EXPECT_FALSE(h.any_out());
  EXPECT_EQ(h.view(kStart).front().ejections, 1U);
}

TEST(EndpointHealthTest, ASuccessBreaksTheStreak) {
  EndpointHealth h = three();
  h.configure(outlier(3), std::nullopt);
  fail(h, 1, 2, kStart);
  h.record(1, false, kStart);
  fail(h, 1, 2, kStart);
  EXPECT_EQ(h.state(1, kStart), EndpointState::kHealthy);
  EXPECT_EQ(h.view(kStart)[1].consecutive_failures, 2U);
}

TEST(EndpointHealthTest, RepeatEjectionsLastLongerUpToTenTimesTheBase) {
  EndpointHealth h({"a:1", "b:1"});
  h.configure(outlier(1), std::nullopt);
  core::TimePoint now = kStart;
  std::vector<std::int64_t> seconds_out;
  for (int round = 0; round < 12; ++round) {
    ASSERT_TRUE(h.record(0, true, now));
    const core::TimePoint until = h.view(now).front().ejected_until;
    seconds_out.push_back(std::chrono::duration_cast<seconds>(until - now).count());
    now = until;  // back in, and failing again at once
    h.end_ejections(now);
  }
  EXPECT_EQ(seconds_out,
            (std::vector<std::int64_t>{30, 60, 90, 120, 150, 180, 210, 240, 270, 300, 300, 300}));
}

TEST(EndpointHealthTest, TimeBackInForgivesPastEjections) {
  EndpointHealth h({"a:1", "b:1"});
  h.configure(outlier(1), std::nullopt);
  ASSERT_TRUE(h.record(0, true, kStart));                // out 30 s, until +30
  ASSERT_TRUE(h.record(0, true, kStart + seconds(30)));  // out 60 s, until +90
  // Back in from +90; two base periods later both ejections are forgiven.
  const core::TimePoint later = kStart + seconds(90) + seconds(60);
  ASSERT_TRUE(h.record(0, true, later));
  EXPECT_EQ(h.view(later).front().ejected_until - later, seconds(30));
}

TEST(EndpointHealthTest, NeverEjectsMoreThanTheCap) {
  EndpointHealth h({"a:1", "b:1", "c:1", "d:1"});
  h.configure(outlier(1, 50), std::nullopt);
  EXPECT_TRUE(h.record(0, true, kStart));
  EXPECT_TRUE(h.record(1, true, kStart));
  EXPECT_FALSE(h.record(2, true, kStart)) << "two of four is the 50% cap";
  EXPECT_EQ(h.state(2, kStart), EndpointState::kHealthy);
  h.end_ejections(kStart + seconds(30));
  EXPECT_TRUE(h.record(2, true, kStart + seconds(30)))
      << "the streak stayed: the next failure once there is room ejects";
}

TEST(EndpointHealthTest, OutlierOffNeverEjects) {
  EndpointHealth h = three();
  h.configure(std::nullopt, std::nullopt);
  fail(h, 0, 100, kStart);
  EXPECT_EQ(h.state(0, kStart), EndpointState::kHealthy);
}

TEST(EndpointHealthTest, ChecksTakeAnEndpointOutAndBackAtTheirThresholds) {
  EndpointHealth h = three();
  h.configure(std::nullopt, check(2, 3));
  EXPECT_EQ(h.check_result(2, false), CheckChange::kNone);
  EXPECT_EQ(h.check_result(2, false), CheckChange::kNone);
  EXPECT_EQ(h.check_result(2, false), CheckChange::kBecameUnhealthy);
  EXPECT_EQ(h.check_result(2, false), CheckChange::kNone) << "a change is reported once";
  EXPECT_EQ(h.state(2, kStart), EndpointState::kUnhealthy);
  EXPECT_EQ(h.check_result(2, true), CheckChange::kNone);
  EXPECT_EQ(h.check_result(2, false), CheckChange::kNone) << "a failure resets the passes";
  EXPECT_EQ(h.check_result(2, true), CheckChange::kNone);
  EXPECT_EQ(h.check_result(2, true), CheckChange::kBecameHealthy);
  EXPECT_TRUE(h.pickable(2, kStart));
}

TEST(EndpointHealthTest, DrainingWinsOverEveryOtherStateAndClears) {
  EndpointHealth h = three();
  h.configure(outlier(1), check(1, 1));
  h.check_result(0, false);
  ASSERT_TRUE(h.set_draining("a:1", true));
  EXPECT_EQ(h.state(0, kStart), EndpointState::kDraining);
  EXPECT_FALSE(h.set_draining("z:1", true));
  ASSERT_TRUE(h.set_draining("a:1", false));
  EXPECT_EQ(h.state(0, kStart), EndpointState::kUnhealthy);
}

TEST(EndpointHealthTest, SwitchingChecksOffClearsTheirVerdicts) {
  EndpointHealth h = three();
  h.configure(std::nullopt, check(1, 1));
  h.check_result(0, false);
  h.configure(std::nullopt, std::nullopt);
  EXPECT_TRUE(h.pickable(0, kStart));
  EXPECT_FALSE(h.any_out());
}

TEST(EndpointHealthTest, RetriesInFlightStayWithinTheLargerOfTheFloorAndTheShare) {
  EndpointHealth h = three();
  EXPECT_TRUE(h.start_retry(2, 20));
  EXPECT_TRUE(h.start_retry(2, 20));
  EXPECT_FALSE(h.start_retry(2, 20)) << "no traffic: the floor of 2";
  for (int i = 0; i < 20; ++i) {
    h.add_in_flight(static_cast<std::size_t>(i % 3));
  }
  EXPECT_TRUE(h.start_retry(2, 20)) << "20% of 20 requests in flight is 4";
  EXPECT_TRUE(h.start_retry(2, 20));
  EXPECT_FALSE(h.start_retry(2, 20));
  EXPECT_EQ(h.retries_in_flight(), 4U);
  h.end_retry();
  EXPECT_TRUE(h.start_retry(2, 20));
  EXPECT_FALSE(h.start_retry(0, 0)) << "a zero budget refuses every retry";
}

TEST(HealthRegistryTest, SameEndpointsSameObjectNewListInheritsWhatItKeeps) {
  HealthRegistry registry;
  config::BackendConfig backend;
  backend.endpoints = {{"10.0.0.1", 80}, {"10.0.0.2", 80}};
  backend.outlier = outlier(1);
  const auto first = registry.sync("b", backend);
  ASSERT_TRUE(first->set_draining("10.0.0.2:80", true));
  ASSERT_TRUE(first->record(0, true, kStart));
  EXPECT_EQ(registry.sync("b", backend), first);

  backend.endpoints = {{"10.0.0.2", 80}, {"10.0.0.3", 80}};
  const auto second = registry.sync("b", backend);
  ASSERT_NE(second, first);
  EXPECT_EQ(second->state(0, kStart), EndpointState::kDraining) << "10.0.0.2 kept its state";
  EXPECT_EQ(second->state(1, kStart), EndpointState::kHealthy);
  EXPECT_EQ(registry.find("b"), second);
  registry.retain({});
  EXPECT_EQ(registry.find("b"), nullptr);
}

}  // namespace
}  // namespace sluice::health
