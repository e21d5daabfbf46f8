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

}  // namespace
}  // namespace sluice::http2
