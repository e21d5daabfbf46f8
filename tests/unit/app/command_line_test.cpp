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
  const auto r = parse({"--config", "a.json"});
  ASSERT_TRUE(r.command_line) << r.error;
  EXPECT_EQ(r.command_line->log_level, "info");
}

// Checks that a command line came back before reading it: `->` on an empty optional reads
// whatever bytes are there, and a stray non-zero byte would pass EXPECT_TRUE.
TEST(CommandLineTest, VersionAndHelpNeedNoConfig) {
  const auto version = parse({"--version"});
  ASSERT_TRUE(version.command_line) << version.error;
  EXPECT_TRUE(version.command_line->version);
  EXPECT_FALSE(version.command_line->help);
  const auto help = parse({"-h"});
  ASSERT_TRUE(help.command_line) << help.error;
  EXPECT_TRUE(help.command_line->help);
  EXPECT_FALSE(help.command_line->version);
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
