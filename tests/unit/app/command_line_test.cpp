// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/command_line.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace sluice::app {
namespace {

CommandLineResult parse(std::vector<const char*> args) {
  args.insert(args.begin(), "sluice");
  return parse_command_line(args);
}

TEST(CommandLineTest, ParsesEveryOption) {
  const auto r = parse({"--config", "conf/sluice.json", "--check", "--log-level", "debug"});
  ASSERT_TRUE(r.command_line) << r.error;
  EXPECT_EQ(r.command_line->config_path, "conf/sluice.json");
  EXPECT_TRUE(r.command_line->check);
  EXPECT_EQ(r.command_line->log_level, "debug");
  EXPECT_FALSE(r.command_line->version);
}

TEST(CommandLineTest, AcceptsTheEqualsForm) {
  const auto r = parse({"--config=a.json", "--log-level=warn"});
  ASSERT_TRUE(r.command_line) << r.error;
  EXPECT_EQ(r.command_line->config_path, "a.json");
  EXPECT_EQ(r.command_line->log_level, "warn");
  EXPECT_FALSE(r.command_line->check);
}

TEST(CommandLineTest, DefaultsTheLogLevelToInfo) {
  EXPECT_EQ(parse({"--config", "a.json"}).command_line->log_level, "info");
}

TEST(CommandLineTest, VersionAndHelpNeedNoConfig) {
  EXPECT_TRUE(parse({"--version"}).command_line->version);
  EXPECT_TRUE(parse({"-h"}).command_line->help);
}

TEST(CommandLineTest, ReportsEachUsageError) {
  EXPECT_EQ(parse({}).error, "--config PATH is required");
  EXPECT_EQ(parse({"--config"}).error, "--config needs a value");
  EXPECT_EQ(parse({"--config="}).error, "--config needs a path");
  EXPECT_EQ(parse({"--config", "a", "--config", "b"}).error, "--config given twice");
  EXPECT_EQ(parse({"--config", "a", "--log-level", "loud"}).error,
            "--log-level must be one of trace, debug, info, warn, error");
  EXPECT_EQ(parse({"--config", "a", "--check=yes"}).error, "--check takes no value");
  EXPECT_EQ(parse({"--config", "a", "extra"}).error, "unknown argument: extra");
}

}  // namespace
}  // namespace sluice::app
