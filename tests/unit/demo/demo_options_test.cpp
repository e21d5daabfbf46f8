// SPDX-License-Identifier: Apache-2.0
#include "gateway/demo/demo_options.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace sluice::demo {
namespace {

using std::chrono::milliseconds;

DemoOptionsResult parse_args(std::vector<const char*> args) {
  args.insert(args.begin(), "sluice-demo-backend");
  return parse_demo_options(args);
}

TEST(DemoOptionsTest, DefaultsToAHealthyInstance) {
  const auto r = parse_args({"--port", "9001"});
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_EQ(r.options->port, 9001);
  EXPECT_EQ(r.options->threads, 1U);
  EXPECT_EQ(r.options->faults, FaultSettings{});
}

TEST(DemoOptionsTest, ParsesTheFaultOptionsInBothForms) {
  const auto r = parse_args({"--health", "down", "--fail-percent=25", "--fail-status", "reset",
                             "--delay-ms=600000", "--threads", "2"});
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_EQ(r.options->faults,
            (FaultSettings{false, 25, FailStatus::kReset, milliseconds(600000)}));
  EXPECT_EQ(r.options->threads, 2U);
  const auto again = parse_args({"--health=down", "--health=up", "--fail-status=503"});
  ASSERT_TRUE(again.options) << again.error;
  EXPECT_EQ(again.options->faults, FaultSettings{});
}

TEST(DemoOptionsTest, ParsesTheCapacityOptions) {
  const auto r = parse_args({"--capacity", "16", "--service-ms=10"});
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_EQ(r.options->faults.capacity, 16U);
  EXPECT_EQ(r.options->faults.service, milliseconds(10));
  const auto bounds = parse_args({"--capacity=100000", "--service-ms", "600000"});
  ASSERT_TRUE(bounds.options) << bounds.error;
  EXPECT_EQ(bounds.options->faults.capacity, 100000U);
  EXPECT_EQ(bounds.options->faults.service, milliseconds(600000));
  const auto defaults = parse_args({});
  ASSERT_TRUE(defaults.options) << defaults.error;
  EXPECT_EQ(defaults.options->faults.capacity, 0U);  // unlimited
  EXPECT_EQ(defaults.options->faults.service, milliseconds(0));
}

TEST(DemoOptionsTest, ReportsEachBadFaultOption) {
  EXPECT_EQ(parse_args({"--health", "sick"}).error, "--health must be up or down, got 'sick'");
  EXPECT_EQ(parse_args({"--fail-percent", "101"}).error,
            "--fail-percent must be between 0 and 100, got '101'");
  EXPECT_EQ(parse_args({"--fail-status=500"}).error,
            "--fail-status must be 503 or reset, got '500'");
  EXPECT_EQ(parse_args({"--delay-ms", "-1"}).error,
            "--delay-ms must be between 0 and 600000, got '-1'");
  EXPECT_EQ(parse_args({"--delay-ms"}).error, "--delay-ms needs a value");
  EXPECT_EQ(parse_args({"--capacity", "100001"}).error,
            "--capacity must be between 0 and 100000, got '100001'");
  EXPECT_EQ(parse_args({"--capacity=many"}).error,
            "--capacity must be between 0 and 100000, got 'many'");
  EXPECT_EQ(parse_args({"--service-ms", "600001"}).error,
            "--service-ms must be between 0 and 600000, got '600001'");
  EXPECT_EQ(parse_args({"--service-ms"}).error, "--service-ms needs a value");
  EXPECT_EQ(parse_args({"--service_ms", "1"}).error, "unknown argument: --service_ms");
  EXPECT_EQ(parse_args({"--fail_percent", "1"}).error, "unknown argument: --fail_percent");
  EXPECT_EQ(parse_args({"--port", "70000"}).error,
            "--port must be between 0 and 65535, got '70000'");
}

TEST(DemoOptionsTest, UsageNamesEveryOption) {
  for (const char* option : {"--address", "--port", "--threads", "--health", "--fail-percent",
                             "--fail-status", "--delay-ms", "--capacity", "--service-ms"}) {
    EXPECT_NE(demo_usage().find(option), std::string::npos) << option;
  }
}

}  // namespace
}  // namespace sluice::demo
