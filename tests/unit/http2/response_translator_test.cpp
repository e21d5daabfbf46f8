// SPDX-License-Identifier: Apache-2.0
// The HTTP/1.1 response the data path writes, as HTTP/2 sends it (docs/http2.md).
#include "gateway/http2/response_translator.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::http2 {
namespace {

struct Recorder final : ResponseListener {
  struct Head {
    int status;
    FieldVector fields;
    bool final;
  };
  std::vector<Head> heads;
  std::string body;
  bool ended = false;
  FieldVector trailers;

  void on_head(int status, const FieldBlock& fields, bool final) override {
    heads.push_back({status, fields.to_vector(), final});
  }
  void on_body(std::string_view bytes) override { body.append(bytes); }
  void on_end(const FieldBlock& t) override {
    ended = true;
    trailers = t.to_vector();
  }
};

/// Feeds `bytes` one byte at a time: every split point must work.
bool feed_bytewise(ResponseTranslator& t, std::string_view bytes) {
  for (const char c : bytes) {
    if (!t.feed(std::string_view(&c, 1))) {
      return false;
    }
  }
  return true;
}

TEST(ResponseTranslatorTest, ConnectionSpecificFieldsGoAndNamesAreLowercase) {
  Recorder r;
  ResponseTranslator t(r);
  t.reset(false);
  ASSERT_TRUE(
      t.feed("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close, X-Hop\r\n"
             "Keep-Alive: timeout=5\r\nX-Hop: 1\r\nUpgrade: h2c\r\nContent-Length: 5\r\n"
             "\r\nhello"));
  ASSERT_EQ(r.heads.size(), 1U);
  EXPECT_EQ(r.heads[0].status, 200);
  EXPECT_TRUE(r.heads[0].final);
  const FieldVector expected{{"content-type", "text/plain"}, {"content-length", "5"}};
  EXPECT_EQ(r.heads[0].fields, expected);
  EXPECT_EQ(r.body, "hello");
  EXPECT_TRUE(r.ended);
  EXPECT_TRUE(t.done());
}

TEST(ResponseTranslatorTest, ChunkedFramingIsRemovedAndTrailersKept) {
  Recorder r;
  ResponseTranslator t(r);
  t.reset(false);
  ASSERT_TRUE(feed_bytewise(t,
                            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                            "Trailer: grpc-status\r\n\r\n"
                            "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\ngrpc-status: 0\r\n\r\n"));
  ASSERT_EQ(r.heads.size(), 1U);
  const FieldVector fields{{"trailer", "grpc-status"}};
  EXPECT_EQ(r.heads[0].fields, fields);
  EXPECT_EQ(r.body, "hello world");
  ASSERT_TRUE(r.ended);
  const FieldVector trailers{{"grpc-status", "0"}};
  EXPECT_EQ(r.trailers, trailers);
}

TEST(ResponseTranslatorTest, InformationalHeadsComeBeforeTheFinalOne) {
  Recorder r;
  ResponseTranslator t(r);
  t.reset(false);
  ASSERT_TRUE(
      t.feed("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"));
  ASSERT_EQ(r.heads.size(), 2U);
  EXPECT_EQ(r.heads[0].status, 100);
  EXPECT_FALSE(r.heads[0].final);
  EXPECT_EQ(r.heads[1].status, 201);
  EXPECT_TRUE(r.heads[1].final);
  EXPECT_TRUE(r.ended);
}

TEST(ResponseTranslatorTest, AHeadResponseHasNoBodyWhateverItsLength) {
  Recorder r;
  ResponseTranslator t(r);
  t.reset(true);
  ASSERT_TRUE(t.feed("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"));
  EXPECT_TRUE(r.ended);
  EXPECT_EQ(r.body, "");
  const FieldVector fields{{"content-length", "1000"}};
  EXPECT_EQ(r.heads[0].fields, fields);
}

TEST(ResponseTranslatorTest, ABodyDelimitedByTheCloseEndsAtFinish) {
  Recorder r;
  ResponseTranslator t(r);
  t.reset(false);
  ASSERT_TRUE(t.feed("HTTP/1.1 200 OK\r\n\r\nsome"));
  ASSERT_TRUE(t.feed(" bytes"));
  EXPECT_FALSE(r.ended);
  EXPECT_TRUE(t.finish());
  EXPECT_TRUE(r.ended);
  EXPECT_EQ(r.body, "some bytes");
}

TEST(ResponseTranslatorTest, ACutResponseIsNotComplete) {
  Recorder r;
  ResponseTranslator t(r);
  t.reset(false);
  ASSERT_TRUE(t.feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"));
  EXPECT_FALSE(t.finish());
  EXPECT_FALSE(r.ended);
}

TEST(ResponseTranslatorTest, GarbageFails) {
  Recorder r;
  ResponseTranslator t(r);
  t.reset(false);
  EXPECT_FALSE(t.feed("SSH-2.0-OpenSSH\r\n\r\n"));
  EXPECT_TRUE(t.failed());
  EXPECT_TRUE(r.heads.empty());
}

TEST(ResponseTranslatorTest, OneTranslatorServesResponseAfterResponse) {
  Recorder r;
  ResponseTranslator t(r);
  t.reset(false);
  ASSERT_TRUE(t.feed("HTTP/1.1 200 OK\r\nX-First: 1\r\nContent-Length: 1\r\n\r\na"));
  EXPECT_TRUE(t.done());
  t.reset(false);
  EXPECT_FALSE(t.done());
  ASSERT_TRUE(t.feed("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"));
  ASSERT_EQ(r.heads.size(), 2U);
  const FieldVector second{{"content-length", "0"}};
  EXPECT_EQ(r.heads[1].fields, second);
  EXPECT_EQ(t.fields().to_vector(), second);
}

/// The same response given as a head of fields then body bytes, and as HTTP/1.1 bytes: the
/// listener hears the same.
TEST(ResponseTranslatorTest, AHeadGivenAsFieldsReportsWhatItsBytesWould) {
  for (const bool head_request : {false, true}) {
    SCOPED_TRACE(head_request);
    Recorder parsed;
    ResponseTranslator by_bytes(parsed);
    by_bytes.reset(head_request);
    ASSERT_TRUE(by_bytes.feed(
        "HTTP/1.1 200 OK\r\nServer: Up\r\nContent-Length: 5\r\nConnection: x\r\nX: 1\r\n\r\n"
        "hello"));

    Recorder given;
    ResponseTranslator by_fields(given);
    by_fields.reset(head_request);
    ASSERT_TRUE(by_fields.can_take_head());
    FieldBlock& fields = by_fields.head_fields();
    fields.add("Server", "Up");
    fields.add("Content-Length", "5");
    fields.add("Connection", "x");
    fields.add("X", "1");
    by_fields.take_head(200, 5);
    EXPECT_FALSE(by_fields.can_take_head());
    if (!head_request) {
      EXPECT_FALSE(by_fields.done());
      ASSERT_TRUE(feed_bytewise(by_fields, "hel"));
      ASSERT_TRUE(by_fields.feed("lo and bytes past the end"));
    }
    ASSERT_EQ(given.heads.size(), 1U);
    EXPECT_EQ(given.heads[0].status, parsed.heads[0].status);
    EXPECT_EQ(given.heads[0].fields, parsed.heads[0].fields);
    EXPECT_EQ(given.heads[0].final, parsed.heads[0].final);
    EXPECT_EQ(given.body, parsed.body);
    EXPECT_EQ(given.ended, parsed.ended);
    EXPECT_TRUE(by_fields.done());
    EXPECT_TRUE(by_fields.finish());
  }
}

TEST(ResponseTranslatorTest, AHeadGivenAsFieldsWithABodyCutShortIsIncomplete) {
  Recorder r;
  ResponseTranslator t(r);
  t.reset(false);
  (void)t.head_fields();
  t.take_head(200, 10);
  ASSERT_TRUE(t.feed("12345"));
  EXPECT_FALSE(t.finish());
  EXPECT_FALSE(r.ended);
  EXPECT_EQ(r.body, "12345");
  t.reset(false);  // the next response starts clean
  EXPECT_TRUE(t.can_take_head());
  (void)t.head_fields();
  t.take_head(204, 0);
  EXPECT_TRUE(r.ended);
  EXPECT_TRUE(t.done());
}

TEST(ResponseTranslatorTest, OnceBytesCameTheHeadCannotComeAsFields) {
  Recorder r;
  ResponseTranslator t(r);
  t.reset(false);
  ASSERT_TRUE(t.feed("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2"));
  EXPECT_FALSE(t.can_take_head());
}

}  // namespace
}  // namespace sluice::http2
