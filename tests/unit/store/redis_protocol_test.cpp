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

/// The replies hiredis' own reader (its reply objects, copied by from_hiredis) makes of `bytes`.
std::vector<RedisReply> hiredis_replies(std::string_view bytes) {
  redisReader* reader = redisReaderCreate();
  redisReaderFeed(reader, bytes.data(), bytes.size());
  std::vector<RedisReply> out;
  void* raw = nullptr;
  while (redisReaderGetReply(reader, &raw) == REDIS_OK && raw != nullptr) {
    out.push_back(from_hiredis(*static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
  redisReaderFree(reader);
  return out;
}

void expect_same(const RedisReply& got, const RedisReply& want, const std::string& where) {
  ASSERT_EQ(got.type, want.type) << where;
  EXPECT_EQ(got.integer, want.integer) << where;
  EXPECT_EQ(got.text, want.text) << where;
  ASSERT_EQ(got.elements.size(), want.elements.size()) << where;
  for (std::size_t i = 0; i < got.elements.size(); ++i) {
    expect_same(got.elements[i], want.elements[i], where + "[" + std::to_string(i) + "]");
  }
}

TEST(ReplyReaderTest, BuildsEveryKindOfReplyAsHiredisOwnObjectsHoldIt) {
  // Every RESP2 type, nested arrays, nil bulk strings and arrays, empty ones, binary and long
  // strings; fed one byte at a time, so every reply is built across many reads.
  const std::string binary("a\0b\r\nc", 6);
  const std::string long_text(70000, 'x');
  const std::string stream =
      "+OK\r\n-ERR wrong type\r\n:-42\r\n:9223372036854775807\r\n$-1\r\n*-1\r\n*0\r\n$0\r\n\r\n"
      "$6\r\n" +
      binary + "\r\n$70000\r\n" + long_text + "\r\n" +
      "*3\r\n:1\r\n*2\r\n$2\r\nhi\r\n*1\r\n$-1\r\n-inner\r\n"
      "*4\r\n$13\r\n1700000000000\r\n$-1\r\n*0\r\n+done\r\n";
  const std::vector<RedisReply> want = hiredis_replies(stream);
  ASSERT_EQ(want.size(), 12U);

  ReplyReader reader;
  bool protocol_error = false;
  std::vector<RedisReply> got;
  for (const char byte : stream) {
    reader.feed(std::string_view(&byte, 1));
    while (auto reply = reader.next(protocol_error)) {
      got.push_back(std::move(*reply));
    }
  }
  EXPECT_FALSE(protocol_error);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    expect_same(got[i], want[i], "reply " + std::to_string(i));
  }
}

/// Feeds `bytes` and reads: true when the reader found a protocol error (and no reply).
bool refuses(ReplyReader& reader, std::string_view bytes) {
  bool protocol_error = false;
  reader.feed(bytes);
  return !reader.next(protocol_error) && protocol_error;
}

TEST(ReplyReaderTest, AReplyLeftUnfinishedByAProtocolErrorIsDroppedAndTheNextStreamReads) {
  ReplyReader reader;
  EXPECT_TRUE(refuses(reader, "*3\r\n:1\r\n*2\r\n$2\r\nhi\r\n!bad\r\n"));

  reader.reset();  // a new connection
  bool protocol_error = false;
  const std::string_view next = "*2\r\n:7\r\n$1\r\nz\r\n";
  reader.feed(next);
  const auto reply = reader.next(protocol_error);
  ASSERT_TRUE(reply.has_value());
  expect_same(*reply, hiredis_replies(next).at(0), "the reply after reset()");
  EXPECT_FALSE(protocol_error);

  // A reader dropped in the middle of a reply frees what it built (ASan checks the run).
  ReplyReader dropped;
  dropped.feed("*2\r\n*2\r\n$5\r\nhello\r\n");
  EXPECT_FALSE(dropped.next(protocol_error));
}

TEST(ReplyReaderTest, RefusesAnArrayAnnouncingMoreElementsThanAnyReplyHas) {
  // hiredis allocates the announced count at once: 381916384 elements would be about 3 GB
  // (found by the redis_reply fuzz target; tests/fuzz/regressions/redis_reply).
  ReplyReader reader;
  EXPECT_TRUE(refuses(reader, "*381916384\r\n:1\r\n"));

  ReplyReader largest;
  bool protocol_error = false;
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
