// SPDX-License-Identifier: Apache-2.0
// `sluice replay ...` on the command line (gateway/app/command_line.cpp).
#include <gtest/gtest.h>

#include <vector>

#include "gateway/app/command_line.hpp"

namespace sluice::app {
namespace {

CommandLineResult parse_replay_args(std::vector<const char*> args) {
  args.insert(args.begin(), {"sluice", "replay"});
  return parse_command_line(args);
}

TEST(ReplayCommandLineTest, ParsesEveryOption) {
  const auto r =
      parse_replay_args({"--config", "new.json", "--top", "3", "--format=json", "a.log"});
  ASSERT_TRUE(r.command_line) << r.error;
  ASSERT_TRUE(r.command_line->replay.has_value());
  const ReplayArgs& args = *r.command_line->replay;
  EXPECT_EQ(args.config_path, "new.json");
  EXPECT_EQ(args.log_path, "a.log");
  EXPECT_EQ(args.top, 3U);
  EXPECT_TRUE(args.json);
}

TEST(ReplayCommandLineTest, DefaultsToTextAndTenUsersAndTakesStdin) {
  const auto r = parse_replay_args({"-", "--config=new.json"});
  ASSERT_TRUE(r.command_line) << r.error;
  ASSERT_TRUE(r.command_line->replay.has_value());
  EXPECT_EQ(r.command_line->replay->log_path, "-");
  EXPECT_EQ(r.command_line->replay->top, 10U);
  EXPECT_FALSE(r.command_line->replay->json);
}

TEST(ReplayCommandLineTest, RefusesWhatItCannotUse) {
  EXPECT_EQ(parse_replay_args({"a.log"}).error, "replay: --config NEW.json is required");
  EXPECT_EQ(parse_replay_args({"--config", "n.json"}).error,
            "replay: the access log to replay is required (a file, or - for stdin)");
  EXPECT_EQ(parse_replay_args({"--config", "n.json", "a.log", "b.log"}).error,
            "replay takes one access log (given: a.log, b.log)");
  EXPECT_EQ(parse_replay_args({"--config", "n.json", "--top", "x", "a.log"}).error,
            "--top must be a number from 0 to 1000");
  EXPECT_EQ(parse_replay_args({"--config", "n.json", "--top", "1001", "a.log"}).error,
            "--top must be a number from 0 to 1000");
  EXPECT_EQ(parse_replay_args({"--config", "n.json", "--format", "xml", "a.log"}).error,
            "--format must be text or json");
  EXPECT_EQ(parse_replay_args({"--config", "n.json", "--check", "a.log"}).error,
            "unknown argument: --check");
  EXPECT_EQ(parse_replay_args({"--config", "n.json", "a.log", "--top"}).error,
            "--top needs a value");
}

TEST(ReplayCommandLineTest, HelpNeedsNothingElse) {
  const auto r = parse_replay_args({"--help"});
  ASSERT_TRUE(r.command_line) << r.error;
  EXPECT_TRUE(r.command_line->help);
  EXPECT_NE(usage().find("sluice replay --config NEW.json"), std::string::npos);
}

TEST(ReplayCommandLineTest, OnlyTheFirstArgumentNamesTheSubcommand) {
  const auto r = parse_command_line(std::vector<const char*>{"sluice", "--config", "replay"});
  ASSERT_TRUE(r.command_line) << r.error;
  EXPECT_FALSE(r.command_line->replay.has_value());
  EXPECT_EQ(r.command_line->config_path, "replay");
}

}  // namespace
}  // namespace sluice::app
