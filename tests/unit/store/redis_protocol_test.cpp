// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/redis_protocol.hpp"

#include <gtest/gtest.h>

#include <string>

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
