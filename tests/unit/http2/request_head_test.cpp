// SPDX-License-Identifier: Apache-2.0
// An HTTP/2 request's fields as the HTTP/1.1 head the data path reads (docs/http2.md).
#include "gateway/http2/request_head.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::http2 {
namespace {

RequestHead get(std::size_t max = 16384) {
  RequestHead head(max);
  head.add(":method", "GET");
  head.add(":scheme", "https");
  head.add(":authority", "api.example.test");
  head.add(":path", "/users/7?x=1");
  return head;
}

TEST(RequestHeadTest, PseudoFieldsBecomeTheRequestLineAndHost) {
  RequestHead head = get();
  head.add("accept", "*/*");
  EXPECT_EQ(head.build(false),
            "GET /users/7?x=1 HTTP/1.1\r\nhost: api.example.test\r\naccept: */*\r\n\r\n");
  EXPECT_EQ(head.method(), "GET");
  EXPECT_FALSE(head.oversized());
}

TEST(RequestHeadTest, AuthorityWinsOverAHostFieldWhichStandsInWithoutOne) {
  RequestHead both = get();
  both.add("host", "other.example.test");
  EXPECT_EQ(both.build(false), "GET /users/7?x=1 HTTP/1.1\r\nhost: api.example.test\r\n\r\n");
  RequestHead host_only(16384);
  host_only.add(":method", "GET");
  host_only.add(":scheme", "http");
  host_only.add(":path", "/");
  host_only.add("host", "h.example.test");
  EXPECT_EQ(host_only.build(false), "GET / HTTP/1.1\r\nhost: h.example.test\r\n\r\n");
}

TEST(RequestHeadTest, CookiesAreJoinedAndTeIsDropped) {
  RequestHead head = get();
  head.add("cookie", "a=1");
  head.add("te", "trailers");
  head.add("cookie", "b=2");
  EXPECT_EQ(head.build(false),
            "GET /users/7?x=1 HTTP/1.1\r\nhost: api.example.test\r\ncookie: a=1; b=2\r\n\r\n");
}

TEST(RequestHeadTest, ABodyWithoutALengthIsChunked) {
  RequestHead head = get();
  EXPECT_FALSE(head.has_content_length());
  EXPECT_EQ(head.build(true),
            "GET /users/7?x=1 HTTP/1.1\r\nhost: api.example.test\r\n"
            "transfer-encoding: chunked\r\n\r\n");
  RequestHead sized = get();
  sized.add("content-length", "5");
  EXPECT_TRUE(sized.has_content_length());
}

TEST(RequestHeadTest, ConnectTakesTheAuthorityAsItsTarget) {
  RequestHead head(16384);
  head.add(":method", "CONNECT");
  head.add(":authority", "db.internal:5432");
  EXPECT_EQ(head.build(false),
            "CONNECT db.internal:5432 HTTP/1.1\r\nhost: db.internal:5432\r\n\r\n");
}

TEST(RequestHeadTest, PastTheBudgetTheHeadIsOversizedAndStopsGrowing) {
  RequestHead head = get(200);
  head.add("x-big", std::string(150, 'v'));
  EXPECT_TRUE(head.oversized());
  const std::string built = head.build(false);
  EXPECT_EQ(built.find("x-big"), std::string::npos);
  // A later small field does not undo it.
  head.add("x-small", "1");
  EXPECT_TRUE(head.oversized());
}

TEST(RequestHeadTest, WellFormedOnlyWithAnHttpSchemeAndAnOriginFormPath) {
  const auto head = [](std::string method, std::string scheme, std::string path) {
    RequestHead h(16384);
    h.add(":method", method);
    h.add(":scheme", scheme);
    h.add(":authority", "api.example.test");
    h.add(":path", path);
    return h;
  };
  EXPECT_TRUE(get().well_formed());
  EXPECT_TRUE(head("GET", "http", "/").well_formed());
  EXPECT_TRUE(head("OPTIONS", "https", "*").well_formed());
  // nghttp2 checks the path's form only for http and https: these it lets through.
  EXPECT_FALSE(head("GET", "foo", "http://evil.example/x").well_formed());
  EXPECT_FALSE(head("GET", "foo", "/x").well_formed());
  EXPECT_FALSE(head("GET", "HTTP", "/x").well_formed());
  EXPECT_FALSE(head("GET", "https", "http://evil.example/x").well_formed());
  EXPECT_FALSE(head("GET", "https", "*").well_formed());
  EXPECT_FALSE(head("GET", "https", "").well_formed());
  RequestHead connect(16384);
  connect.add(":method", "CONNECT");
  connect.add(":authority", "api.example.test:443");
  EXPECT_TRUE(connect.well_formed());
}

}  // namespace
}  // namespace sluice::http2
