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

TEST(DemoOptionsTest, ReportsEachBadFaultOption) {
  EXPECT_EQ(parse_args({"--health", "sick"}).error, "--health must be up or down, got 'sick'");
  EXPECT_EQ(parse_args({"--fail-percent", "101"}).error,
            "--fail-percent must be between 0 and 100, got '101'");
  EXPECT_EQ(parse_args({"--fail-status=500"}).error,
            "--fail-status must be 503 or reset, got '500'");
  EXPECT_EQ(parse_args({"--delay-ms", "-1"}).error,
            "--delay-ms must be between 0 and 600000, got '-1'");
  EXPECT_EQ(parse_args({"--delay-ms"}).error, "--delay-ms needs a value");
  EXPECT_EQ(parse_args({"--fail_percent", "1"}).error, "unknown argument: --fail_percent");
  EXPECT_EQ(parse_args({"--port", "70000"}).error,
            "--port must be between 0 and 65535, got '70000'");
}

TEST(DemoOptionsTest, UsageNamesEveryOption) {
  for (const char* option : {"--address", "--port", "--threads", "--health", "--fail-percent",
                             "--fail-status", "--delay-ms"}) {
    EXPECT_NE(demo_usage().find(option), std::string::npos) << option;
  }
}

}  // namespace
}  // namespace sluice::demo
