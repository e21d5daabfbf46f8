// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/redis_protocol.hpp"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::store {
namespace {

TEST(ReplyReaderTest, ReadsRepliesFedInPieces) {
  ReplyReader reader;
  bool protocol_error = false;
  reader.feed("*2\r\n:1\r\n$2\r\nh");
  EXPECT_FALSE(reader.next(protocol_error));
  reader.feed("i\r\n+OK\r\n");
  const auto array = reader.next(protocol_error);
  ASSERT_TRUE(array.has_value());
  ASSERT_EQ(array->elements.size(), 2U);
  EXPECT_EQ(array->elements[0].integer, 1);
  EXPECT_EQ(array->elements[1].text, "hi");
  const auto status = reader.next(protocol_error);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->text, "OK");
  EXPECT_FALSE(protocol_error);
}

TEST(ReplyReaderTest, RefusesAnArrayAnnouncingMoreElementsThanAnyReplyHas) {
  // hiredis allocates the announced count at once: 381916384 elements would be about 3 GB
  // (found by the redis_reply fuzz target; tests/fuzz/regressions/redis_reply).
  ReplyReader reader;
  bool protocol_error = false;
  reader.feed("*381916384\r\n:1\r\n");
  EXPECT_FALSE(reader.next(protocol_error));
  EXPECT_TRUE(protocol_error);

  ReplyReader largest;
  protocol_error = false;
  largest.feed("*" + std::to_string(kMaxReplyElements) + "\r\n");
  EXPECT_FALSE(largest.next(protocol_error));  // allowed: waits for its elements
  EXPECT_FALSE(protocol_error);
}

}  // namespace
}  // namespace sluice::store

namespace sluice::store {
namespace {

/// hiredis' own formatter: the reference the RESP writer must match byte for byte.
std::string hiredis_format(const std::vector<std::string_view>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const std::string_view arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  char* command = nullptr;
  const int n =
      redisFormatCommandArgv(&command, static_cast<int>(args.size()), argv.data(), lengths.data());
  std::string out(command, static_cast<std::size_t>(n));
  redisFreeCommand(command);
  return out;
}

TEST(RespCommandTest, CommandsAreWrittenAsHiredisWritesThem) {
  const std::string binary("a\0b\r\nc", 6);
  const std::string long_value(100000, 'v');
  const std::vector<std::vector<std::string_view>> commands = {
      {"TIME"},
      {"HINCRBY", "sluice:{p:1}:h", "1700000000000", "7"},
      {"HMGET", "k", "", binary, "-1"},
      {"SET", "k", long_value, "PX", "60000"},
  };
  std::string appended;
  for (const auto& args : commands) {
    const std::string expected = hiredis_format(args);
    EXPECT_EQ(format_command(args), expected);
    append_command(appended, std::span<const std::string_view>(args));
    EXPECT_TRUE(appended.ends_with(expected));
  }
  std::string group;
  append_command(group, {"PEXPIRE", "k", "120000"});
  EXPECT_EQ(group, "*3\r\n$7\r\nPEXPIRE\r\n$1\r\nk\r\n$6\r\n120000\r\n");
}

}  // namespace
}  // namespace sluice::store
