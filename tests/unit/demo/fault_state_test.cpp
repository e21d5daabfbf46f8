// SPDX-License-Identifier: Apache-2.0
#include "gateway/demo/fault_state.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

namespace sluice::demo {
namespace {

using std::chrono::milliseconds;

/// The 0-based numbers of the failing requests among the next `count` of `state`.
std::vector<std::uint64_t> failing(FaultState& state, std::uint64_t count) {
  std::vector<std::uint64_t> numbers;
  for (std::uint64_t n = 0; n < count; ++n) {
    if (state.next_failure()) {
      numbers.push_back(n);
    }
  }
  return numbers;
}

TEST(FaultSpreadTest, FailsExactlyThePercentOfAny100ConsecutiveRequests) {
  for (unsigned percent = 0; percent <= kMaxFailPercent; ++percent) {
    // Every window, whatever its start (the sum telescopes to floor(p) across 100 numbers).
    for (std::uint64_t start = 0; start < 250; ++start) {
      unsigned failures = 0;
      for (std::uint64_t n = start; n < start + 100; ++n) {
        failures += fails_at(n, percent) ? 1 : 0;
      }
      ASSERT_EQ(failures, percent) << "percent " << percent << ", window from " << start;
    }
  }
}

TEST(FaultSpreadTest, SpreadsTheFailuresEvenly) {
  FaultState ten({true, 10, FailStatus::k503, milliseconds(0)});
  EXPECT_EQ(failing(ten, 100), (std::vector<std::uint64_t>{9, 19, 29, 39, 49, 59, 69, 79, 89, 99}));
  FaultState half({true, 50, FailStatus::k503, milliseconds(0)});
  EXPECT_EQ(failing(half, 6), (std::vector<std::uint64_t>{1, 3, 5}));
  FaultState one({true, 1, FailStatus::k503, milliseconds(0)});
  EXPECT_EQ(failing(one, 200), (std::vector<std::uint64_t>{99, 199}));
  FaultState all({true, 100, FailStatus::k503, milliseconds(0)});
  EXPECT_EQ(failing(all, 3), (std::vector<std::uint64_t>{0, 1, 2}));
  FaultState none;
  EXPECT_TRUE(failing(none, 1000).empty());
}

TEST(FaultSpreadTest, OnlyTheRemainderModulo100Matters) {
  constexpr std::uint64_t kHuge = UINT64_MAX - 50;  // (n+1)·p would overflow without it
  for (unsigned percent : {1U, 37U, 99U, 100U}) {
    EXPECT_EQ(fails_at(kHuge, percent), fails_at(kHuge % 100, percent)) << percent;
  }
}

TEST(FaultStateTest, FailsWithTheConfiguredStatus) {
  FaultState state({true, 100, FailStatus::kReset, milliseconds(0)});
  EXPECT_EQ(state.next_failure(), FailStatus::kReset);
  state.apply({.fail_status = FailStatus::k503});
  EXPECT_EQ(state.next_failure(), FailStatus::k503);
}

TEST(FaultStateTest, SettingFailPercentRestartsTheCount) {
  FaultState state({true, 10, FailStatus::k503, milliseconds(0)});
  EXPECT_EQ(failing(state, 5).size(), 0U);  // requests 0..4
  state.apply({.fail_percent = 10U});       // the same value still restarts
  EXPECT_EQ(failing(state, 10), std::vector<std::uint64_t>{9});
  state.apply({.healthy = false});  // other settings keep the count
  EXPECT_EQ(failing(state, 10), std::vector<std::uint64_t>{9});
}

TEST(FaultStateTest, AppliesOnlyTheNamedSettings) {
  const FaultSettings initial{false, 20, FailStatus::kReset, milliseconds(300)};
  FaultState state(initial);
  EXPECT_EQ(state.settings(), initial);
  EXPECT_FALSE(state.is_healthy());
  EXPECT_EQ(state.delay(), milliseconds(300));
  state.apply({});
  EXPECT_EQ(state.settings(), initial);
  state.apply({.healthy = true, .delay = milliseconds(0)});
  EXPECT_EQ(state.settings(), (FaultSettings{true, 20, FailStatus::kReset, milliseconds(0)}));
}

TEST(FaultStateTest, AppliesTheCapacityAndServiceTime) {
  FaultSettings initial;
  initial.capacity = 3;
  initial.service = milliseconds(50);
  FaultState state(initial);
  EXPECT_EQ(state.settings(), initial);
  EXPECT_EQ(state.capacity().capacity(), 3U);
  EXPECT_EQ(state.service_time(), milliseconds(50));
  state.apply({.capacity = 1U});
  EXPECT_EQ(state.capacity().capacity(), 1U);
  EXPECT_EQ(state.service_time(), milliseconds(50));
  state.apply({.service = milliseconds(0)});
  EXPECT_EQ(state.settings().capacity, 1U);
  EXPECT_EQ(state.settings().service, milliseconds(0));
}

TEST(ControlQueryTest, ParsesAnySubsetInAnyOrder) {
  const auto all =
      parse_control_query("delay_ms=250&fail_status=reset&fail_percent=30&health=down");
  ASSERT_EQ(all.error, ParameterError::kNone) << all.parameter;
  EXPECT_EQ(all.update.applied_to({}),
            (FaultSettings{false, 30, FailStatus::kReset, milliseconds(250)}));
  const auto one = parse_control_query("fail_percent=100");
  ASSERT_EQ(one.error, ParameterError::kNone);
  EXPECT_EQ(one.update.fail_percent, 100U);
  EXPECT_FALSE(one.update.healthy || one.update.fail_status || one.update.delay);
  const auto empty = parse_control_query("");
  EXPECT_EQ(empty.error, ParameterError::kNone);
  EXPECT_EQ(empty.update.applied_to({}), FaultSettings{});
}

TEST(ControlQueryTest, ParsesTheCapacityAndServiceTime) {
  const auto both = parse_control_query("capacity=16&service_ms=10");
  ASSERT_EQ(both.error, ParameterError::kNone) << both.parameter;
  EXPECT_EQ(both.update.capacity, 16U);
  EXPECT_EQ(both.update.service, milliseconds(10));
  EXPECT_FALSE(both.update.healthy || both.update.fail_percent || both.update.delay);
  FaultSettings expected;
  expected.capacity = 16;
  expected.service = milliseconds(10);
  EXPECT_EQ(both.update.applied_to({}), expected);
  const auto bounds = parse_control_query("capacity=100000&service_ms=600000");
  ASSERT_EQ(bounds.error, ParameterError::kNone);
  EXPECT_EQ(bounds.update.capacity, kMaxCapacity);
  EXPECT_EQ(bounds.update.service, kMaxServiceTime);
  const auto unlimited = parse_control_query("capacity=0&service_ms=0");
  ASSERT_EQ(unlimited.error, ParameterError::kNone);
  EXPECT_EQ(unlimited.update.capacity, 0U);
  EXPECT_EQ(unlimited.update.service, milliseconds(0));
}

TEST(ControlQueryTest, TakesTheBoundsAndTheLastOfRepeatedParameters) {
  const auto bounds = parse_control_query("fail_percent=0&delay_ms=600000&health=up");
  ASSERT_EQ(bounds.error, ParameterError::kNone);
  EXPECT_EQ(bounds.update.fail_percent, 0U);
  EXPECT_EQ(bounds.update.delay, milliseconds(600000));
  EXPECT_EQ(bounds.update.healthy, true);
  const auto repeated = parse_control_query("&health=down&&health=up&fail_status=503&");
  ASSERT_EQ(repeated.error, ParameterError::kNone);
  EXPECT_EQ(repeated.update.healthy, true);
  EXPECT_EQ(repeated.update.fail_status, FailStatus::k503);
}

TEST(ControlQueryTest, NamesTheFirstBadParameterAndKeepsNothing) {
  struct Case {
    const char* query;
    ParameterError error;
    const char* parameter;
  };
  for (const Case& c : std::vector<Case>{
           {"health=sideways", ParameterError::kBadValue, "health"},
           {"health=UP", ParameterError::kBadValue, "health"},
           {"health", ParameterError::kBadValue, "health"},
           {"fail_percent=101", ParameterError::kBadValue, "fail_percent"},
           {"fail_percent=-1", ParameterError::kBadValue, "fail_percent"},
           {"fail_percent=+5", ParameterError::kBadValue, "fail_percent"},
           {"fail_percent=5%25", ParameterError::kBadValue, "fail_percent"},
           {"fail_percent=", ParameterError::kBadValue, "fail_percent"},
           {"fail_status=500", ParameterError::kBadValue, "fail_status"},
           {"delay_ms=600001", ParameterError::kBadValue, "delay_ms"},
           {"delay_ms=99999999999999999999999", ParameterError::kBadValue, "delay_ms"},
           {"delay_ms=1.5", ParameterError::kBadValue, "delay_ms"},
           {"capacity=100001", ParameterError::kBadValue, "capacity"},
           {"capacity=-1", ParameterError::kBadValue, "capacity"},
           {"capacity=", ParameterError::kBadValue, "capacity"},
           {"service_ms=600001", ParameterError::kBadValue, "service_ms"},
           {"service_ms=ten", ParameterError::kBadValue, "service_ms"},
           {"capacity=8&service-ms=5", ParameterError::kUnknown, "service-ms"},
           {"health=down&fail=1", ParameterError::kUnknown, "fail"},
           {"fail_percent=10&health=x&fail_status=y", ParameterError::kBadValue, "health"},
           {"=1", ParameterError::kUnknown, ""},
       }) {
    const auto parsed = parse_control_query(c.query);
    EXPECT_EQ(parsed.error, c.error) << c.query;
    EXPECT_EQ(parsed.parameter, c.parameter) << c.query;
    EXPECT_EQ(parsed.update.applied_to({}), FaultSettings{}) << c.query;
  }
}

TEST(ControlQueryTest, SaysWhatEachParameterExpects) {
  EXPECT_EQ(expected_values("health"), "up or down");
  EXPECT_EQ(expected_values("fail_percent"), "between 0 and 100");
  EXPECT_EQ(expected_values("fail_status"), "503 or reset");
  EXPECT_EQ(expected_values("delay_ms"), "between 0 and 600000");
  EXPECT_EQ(expected_values("capacity"), "between 0 and 100000");
  EXPECT_EQ(expected_values("service_ms"), "between 0 and 600000");
  EXPECT_EQ(expected_values("nope"), "");
}

TEST(ControlQueryTest, SetParameterLeavesTheUpdateAloneOnAnError) {
  FaultUpdate update;
  EXPECT_EQ(set_parameter(update, "fail_percent", "7"), ParameterError::kNone);
  EXPECT_EQ(set_parameter(update, "fail_percent", "700"), ParameterError::kBadValue);
  EXPECT_EQ(set_parameter(update, "Fail_percent", "7"), ParameterError::kUnknown);
  EXPECT_EQ(update.fail_percent, 7U);
}

TEST(FaultSettingsTest, RendersEveryFieldAsJson) {
  EXPECT_EQ(settings_json({}),
            R"({"health":"up","fail_percent":0,"fail_status":"503","delay_ms":0,)"
            R"("capacity":0,"service_ms":0})");
  EXPECT_EQ(settings_json({false, 100, FailStatus::kReset, milliseconds(600000), 100000,
                           milliseconds(600000)}),
            R"({"health":"down","fail_percent":100,"fail_status":"reset","delay_ms":600000,)"
            R"("capacity":100000,"service_ms":600000})");
  EXPECT_EQ(settings_json({}, ServiceLoad{3, 7}),
            R"({"health":"up","fail_percent":0,"fail_status":"503","delay_ms":0,)"
            R"("capacity":0,"service_ms":0,"in_service":3,"queued":7})");
}

}  // namespace
}  // namespace sluice::demo
