// SPDX-License-Identifier: Apache-2.0
#include "gateway/http1/head_rewrite.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "gateway/http1/message_parser.hpp"

namespace sluice::http1 {
namespace {

/// A parsed head over text the test owns.
template <bool IsRequest>
class Parsed {
 public:
  explicit Parsed(std::string text) : text_(std::move(text)) {
    std::size_t scanned = 0;
    const std::size_t end = find_head_end(text_, scanned);
    boost::system::error_code ec;
    parser_.put(std::string_view(text_).substr(0, end), ec);
    EXPECT_FALSE(ec) << ec.message();
  }
  [[nodiscard]] const auto& head() const { return parser_.head(); }

 private:
  std::string text_;
  MessageParser<IsRequest> parser_;
};

std::string request(const std::string& text, const RequestRewrite& rw) {
  Parsed<true> parsed(text);
  GatherList out;
  write_request_head(parsed.head(), rw, out);
  return out.str();
}

std::string response(const std::string& text, const ResponseRewrite& rw) {
  Parsed<false> parsed(text);
  GatherList out;
  write_response_head(parsed.head(), rw, out);
  return out.str();
}

RequestRewrite plain(std::string_view target = "/x") {
  RequestRewrite rw;
  rw.target = target;
  rw.client_address = "192.0.2.1";
  return rw;
}

TEST(HeadRewriteTest, ForwardsTheClientsFieldBytesUntouchedAndAddsTheForwardingFields) {
  EXPECT_EQ(request("GET /x HTTP/1.1\r\nHost: a\r\nx-custom:  Odd  Spacing \r\n\r\n", plain()),
            "GET /x HTTP/1.1\r\nHost: a\r\nx-custom:  Odd  Spacing \r\n"
            "X-Forwarded-For: 192.0.2.1\r\nX-Forwarded-Proto: http\r\n\r\n");
}

TEST(HeadRewriteTest, SendsHttp11AndTheGivenTarget) {
  EXPECT_EQ(request("GET /api/x?q=1 HTTP/1.0\r\n\r\n", plain("/x?q=1")),
            "GET /x?q=1 HTTP/1.1\r\nX-Forwarded-For: 192.0.2.1\r\nX-Forwarded-Proto: http\r\n\r\n");
}

TEST(HeadRewriteTest, RemovesHopByHopFieldsAndThoseConnectionNames) {
  const std::string out = request(
      "GET /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, X-Secret\r\nX-Secret: s\r\n"
      "Keep-Alive: timeout=5\r\nProxy-Authorization: Basic x\r\nTE: trailers\r\nTrailer: x\r\n"
      "Upgrade: h2c\r\nExpect: 100-continue\r\nX-Kept: k\r\n\r\n",
      plain());
  EXPECT_EQ(out,
            "GET /x HTTP/1.1\r\nHost: a\r\nX-Kept: k\r\n"
            "X-Forwarded-For: 192.0.2.1\r\nX-Forwarded-Proto: http\r\n\r\n");
}

TEST(HeadRewriteTest, StripsTheNamedCredentialFieldsInAnyCase) {
  const std::array<std::string_view, 2> credentials{"Authorization", "X-API-Key"};
  RequestRewrite rw = plain();
  rw.strip = credentials;
  EXPECT_EQ(request("GET /x HTTP/1.1\r\nHost: a\r\nauthorization: Bearer t\r\nx-api-key: k\r\n"
                    "X-API-Key: k2\r\nX-Kept: k\r\n\r\n",
                    rw),
            "GET /x HTTP/1.1\r\nHost: a\r\nX-Kept: k\r\n"
            "X-Forwarded-For: 192.0.2.1\r\nX-Forwarded-Proto: http\r\n\r\n");
}

TEST(HeadRewriteTest, ConnectionCannotRemoveFramingOrHost) {
  const std::string out = request(
      "POST /x HTTP/1.1\r\nHost: a\r\nConnection: Content-Length, Host, Transfer-Encoding\r\n"
      "Content-Length: 2\r\n\r\n",
      plain());
  EXPECT_NE(out.find("Host: a\r\n"), std::string::npos);
  EXPECT_NE(out.find("Content-Length: 2\r\n"), std::string::npos);
  EXPECT_EQ(out.find("Connection"), std::string::npos);
}

TEST(HeadRewriteTest, MergesEveryForwardedForValueInOrderThenThePeer) {
  const std::string out = request(
      "GET /x HTTP/1.1\r\nX-Forwarded-For: 203.0.113.7\r\nHost: a\r\n"
      "x-forwarded-for: 10.0.0.1, 10.0.0.2\r\nX-Forwarded-For: \r\n\r\n",
      plain());
  EXPECT_EQ(out,
            "GET /x HTTP/1.1\r\nHost: a\r\n"
            "X-Forwarded-For: 203.0.113.7, 10.0.0.1, 10.0.0.2, 192.0.2.1\r\n"
            "X-Forwarded-Proto: http\r\n\r\n");
}

TEST(HeadRewriteTest, KeepsForwardedProtoOnlyFromATrustedPeer) {
  const std::string text = "GET /x HTTP/1.1\r\nX-Forwarded-Proto: https\r\n\r\n";
  RequestRewrite rw = plain();
  EXPECT_NE(request(text, rw).find("X-Forwarded-Proto: http\r\n"), std::string::npos);
  EXPECT_EQ(request(text, rw).find("https"), std::string::npos);
  rw.peer_trusted = true;
  EXPECT_NE(request(text, rw).find("X-Forwarded-Proto: https\r\n"), std::string::npos);
  EXPECT_EQ(request(text, rw).find("X-Forwarded-Proto: http\r\n"), std::string::npos);
  // Trusted, but it sent none: ours is added.
  EXPECT_NE(request("GET /x HTTP/1.1\r\n\r\n", rw).find("X-Forwarded-Proto: http\r\n"),
            std::string::npos);
}

TEST(HeadRewriteTest, AddsForwardedHostKeepingATrustedPeersOwn) {
  RequestRewrite rw = plain();
  rw.forwarded_host = "api.example.com:8080";
  const std::string text =
      "GET /x HTTP/1.1\r\nHost: api.example.com:8080\r\n"
      "X-Forwarded-Host: evil.example\r\n\r\n";
  std::string out = request(text, rw);
  EXPECT_NE(out.find("X-Forwarded-Host: api.example.com:8080\r\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("evil.example"), std::string::npos) << out;
  rw.peer_trusted = true;
  out = request(text, rw);
  EXPECT_NE(out.find("X-Forwarded-Host: evil.example\r\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("X-Forwarded-Host: api"), std::string::npos) << out;
  // No Host at all (HTTP/1.0): nothing to forward.
  rw = plain();
  EXPECT_EQ(request("GET /x HTTP/1.0\r\n\r\n", rw).find("X-Forwarded-Host"), std::string::npos);
}

TEST(HeadRewriteTest, ForwardsAnUpgradeWithConnectionUpgradeOnly) {
  const std::string text =
      "GET /chat HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade, X-Secret\r\n"
      "Upgrade: websocket\r\nX-Secret: 1\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
      "Sec-WebSocket-Version: 13\r\n\r\n";
  RequestRewrite rw = plain("/chat");
  EXPECT_EQ(request(text, rw).find("Upgrade"), std::string::npos);  // v1: stripped
  rw.upgrade = true;
  const std::string out = request(text, rw);
  EXPECT_NE(out.find("\r\nUpgrade: websocket\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\nConnection: Upgrade\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"), std::string::npos);
  EXPECT_EQ(out.find("X-Secret"), std::string::npos) << out;    // still named by Connection
  EXPECT_EQ(out.find("keep-alive"), std::string::npos) << out;  // the client's Connection is gone
}

TEST(HeadRewriteTest, ResponseToAnUpgradeKeepsUpgradeAndSaysConnectionUpgrade) {
  const std::string text =
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
  ResponseRewrite rw;
  EXPECT_EQ(response(text, rw).find("Upgrade"), std::string::npos);
  rw.upgrade = true;
  rw.keep_alive = false;  // not looked at
  EXPECT_EQ(response(text, rw),
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nConnection: Upgrade\r\n\r\n");
}

TEST(HeadRewriteTest, ReplacesTheRequestIdOnlyWhenGivenOne) {
  const std::string text = "GET /x HTTP/1.1\r\nX-Request-Id: a b\r\nX-Request-Id: c\r\n\r\n";
  RequestRewrite rw = plain();
  EXPECT_NE(request(text, rw).find("X-Request-Id: c\r\n"), std::string::npos);
  rw.request_id = "0123456789abcdef0123456789abcdef";
  const std::string out = request(text, rw);
  EXPECT_EQ(out.find("X-Request-Id: c"), std::string::npos);
  EXPECT_NE(out.find("X-Request-Id: 0123456789abcdef0123456789abcdef\r\n"), std::string::npos);
}

TEST(HeadRewriteTest, CollapsesAContentLengthListIntoOnePlainField) {
  EXPECT_NE(request("POST /x HTTP/1.1\r\nContent-Length: 4, 4\r\n\r\n", plain())
                .find("Content-Length: 4\r\n"),
            std::string::npos);
  const std::string twice =
      request("POST /x HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\n", plain());
  EXPECT_EQ(twice.find("Content-Length"), twice.rfind("Content-Length"));
}

TEST(HeadRewriteTest, ForwardsOneTransferEncodingLineOfItsOwn) {
  // The client's lines never go on: one line, the codings as sluice read them, after the
  // fields it keeps.
  EXPECT_EQ(request("POST /x HTTP/1.1\r\nTransfer-Encoding: gzip\r\nA: b\r\n"
                    "transfer-encoding:  CHUNKED\r\n\r\n",
                    plain()),
            "POST /x HTTP/1.1\r\nA: b\r\nTransfer-Encoding: gzip, chunked\r\n"
            "X-Forwarded-For: 192.0.2.1\r\nX-Forwarded-Proto: http\r\n\r\n");
}

TEST(HeadRewriteTest, ReplacesEveryHostFieldWhenGivenTheAuthority) {
  RequestRewrite rw = plain();
  rw.replace_host = true;
  rw.host = "api.example.test:8080";
  EXPECT_EQ(
      request("GET http://api.example.test:8080/x HTTP/1.1\r\nHost: other\r\nA: b\r\n\r\n", rw),
      "GET /x HTTP/1.1\r\nHost: api.example.test:8080\r\nA: b\r\n"
      "X-Forwarded-For: 192.0.2.1\r\nX-Forwarded-Proto: http\r\n\r\n");
  rw.host = "";  // an HTTP/1.0 request without Host still gets one, empty, as HTTP/1.1 needs
  EXPECT_EQ(request("GET /x HTTP/1.0\r\nA: b\r\n\r\n", rw),
            "GET /x HTTP/1.1\r\nHost: \r\nA: b\r\n"
            "X-Forwarded-For: 192.0.2.1\r\nX-Forwarded-Proto: http\r\n\r\n");
}

TEST(HeadRewriteTest, GathersAHeadWithoutCopyingTheOriginalBytes) {
  const std::string text =
      "GET /x HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nConnection: close\r\nX-B: 2\r\nX-C: 3\r\n\r\n";
  Parsed<true> parsed(text);
  GatherList out;
  write_request_head(parsed.head(), plain(), out);
  // Views of the parsed head: the method, and the two runs of kept fields around the removed
  // Connection line ("Host..X-A" and "X-B..X-C"); everything else is generated.
  std::vector<std::string> views;
  for (const auto& b : out) {
    const auto* p = static_cast<const char*>(b.data());
    if (p >= parsed.head().base && p < parsed.head().base + parsed.head().size) {
      views.emplace_back(p, b.size());
    }
  }
  EXPECT_EQ(views,
            (std::vector<std::string>{"GET", "Host: a\r\nX-A: 1\r\n", "X-B: 2\r\nX-C: 3\r\n"}));
}

TEST(HeadRewriteTest, ResponseGetsTheClientsVersionAndKeepsItsFieldBytes) {
  ResponseRewrite rw;
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\nServer: up\r\nContent-Length: 2\r\n\r\n", rw),
            "HTTP/1.1 200 OK\r\nServer: up\r\nContent-Length: 2\r\n\r\n");
  rw.version = 10;
  rw.keep_alive = false;
  EXPECT_EQ(response("HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n", rw),
            "HTTP/1.0 404 Not Found\r\nContent-Length: 2\r\n\r\n");
  rw.keep_alive = true;
  EXPECT_NE(response("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", rw)
                .find("Connection: keep-alive\r\n"),
            std::string::npos);
}

TEST(HeadRewriteTest, ResponseSaysCloseWhenTheClientConnectionEnds) {
  ResponseRewrite rw;
  rw.keep_alive = false;
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", rw),
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
}

TEST(HeadRewriteTest, ResponseReframing) {
  ResponseRewrite rw;
  rw.framing = BodyFraming::kChunked;
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\nServer: up\r\n\r\n", rw),
            "HTTP/1.1 200 OK\r\nServer: up\r\nTransfer-Encoding: chunked\r\n\r\n");
  // The upstream's own codings come first, on the one line sluice writes.
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\nTransfer-Encoding: GZIP\r\nServer: up\r\n\r\n", rw),
            "HTTP/1.1 200 OK\r\nServer: up\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
  rw.framing = BodyFraming::kUnchunk;
  rw.version = 10;
  rw.keep_alive = false;
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nServer: up\r\n\r\n", rw),
            "HTTP/1.0 200 OK\r\nServer: up\r\n\r\n");
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", rw),
            "HTTP/1.0 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n");
}

TEST(HeadRewriteTest, ResponsePassesChunkedOnOneLineOfItsOwn) {
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nServer: up\r\n"
                     "Transfer-Encoding:  chunked\r\n\r\n",
                     ResponseRewrite{}),
            "HTTP/1.1 200 OK\r\nServer: up\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
}

TEST(HeadRewriteTest, ResponseAddsTheRequestIdOnlyWhenAbsentAndReplacesExtraFields) {
  ResponseRewrite rw;
  rw.request_id = "rid";
  const ExtraField extra[] = {{"RateLimit", "\"p\";r=1;t=2"}};
  rw.extra = extra;
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\nratelimit: theirs\r\nContent-Length: 0\r\n\r\n", rw),
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Request-Id: rid\r\n"
            "RateLimit: \"p\";r=1;t=2\r\n\r\n");
  rw.extra = {};
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\nX-Request-Id: theirs\r\nContent-Length: 0\r\n\r\n", rw),
            "HTTP/1.1 200 OK\r\nX-Request-Id: theirs\r\nContent-Length: 0\r\n\r\n");
}

TEST(HeadRewriteTest, ResponseRewritesAFoldedFieldOnOneLine) {
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nX-B: b\r\nContent-Length: 0\r\n\r\n",
                     ResponseRewrite{}),
            "HTTP/1.1 200 OK\r\nX-A: one two\r\nX-B: b\r\nContent-Length: 0\r\n\r\n");
  // Also when the first line of the fold is empty.
  EXPECT_EQ(
      response("HTTP/1.1 200 OK\r\nContent-Length:\r\n 6\r\nX-B: b\r\n\r\n", ResponseRewrite{}),
      "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nX-B: b\r\n\r\n");
}

/// for_each_response_field() as text lines, or "<refused>".
std::string response_fields(const std::string& text, const ResponseRewrite& rw) {
  Parsed<false> parsed(text);
  std::string out;
  const bool given = for_each_response_field(
      parsed.head(), rw, [&](std::string_view name, std::string_view value) {
        out.append(name).append(": ").append(value).append("\r\n");
      });
  return given ? out : "<refused>";
}

/// write_response_head()'s fields: without the status line, sluice's own Connection line and
/// the blank line.
std::string written_fields(const std::string& text, const ResponseRewrite& rw) {
  std::string head = response(text, rw);
  head.erase(0, head.find("\r\n") + 2);
  head.erase(head.size() - 2);
  for (const std::string_view own : {"Connection: close\r\n", "Connection: keep-alive\r\n"}) {
    if (const auto at = head.find(own); at != std::string::npos) {
      head.erase(at, own.size());
    }
  }
  return head;
}

TEST(HeadRewriteTest, ResponseFieldsForHttp2AreTheWrittenHeadsFields) {
  // docs/http2.md, "One stream, one HTTP/1.1 request": an HTTP/2 stream takes the head as
  // fields; they must be what the written head carries.
  const ExtraField extra[] = {{"RateLimit", "\"p\";r=1;t=2"}};
  std::vector<ResponseRewrite> rewrites(4);
  rewrites[1].request_id = "rid";
  rewrites[2].request_id = "rid";
  rewrites[2].extra = extra;
  rewrites[3].keep_alive = false;
  const std::string heads[] = {
      "HTTP/1.1 200 OK\r\nServer: up\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\n",
      "HTTP/1.1 204 No Content\r\nDate: today\r\n\r\n",
      "HTTP/1.1 200 OK\r\nConnection: x-hop, close\r\nX-Hop: 1\r\nKeep-Alive: t=5\r\n"
      "Proxy-Authenticate: a\r\nX-Kept: 2\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 4, 4\r\nX-B: b\r\n\r\n",
      "HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nX-Request-Id: theirs\r\nratelimit: theirs\r\nContent-Length: 0\r\n\r\n",
  };
  for (const std::string& head : heads) {
    for (const ResponseRewrite& rw : rewrites) {
      SCOPED_TRACE(head);
      EXPECT_EQ(response_fields(head, rw), written_fields(head, rw));
    }
  }
  EXPECT_EQ(response_fields(heads[3], rewrites[0]), "X-B: b\r\nContent-Length: 4\r\n");
}

TEST(HeadRewriteTest, ResponseFieldsRefuseAHeadThatNeedsItsFramingLines) {
  EXPECT_EQ(response_fields("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", {}),
            "<refused>");
  ResponseRewrite rw;
  rw.framing = BodyFraming::kChunked;
  EXPECT_EQ(response_fields("HTTP/1.1 200 OK\r\nServer: up\r\n\r\n", rw), "<refused>");
  rw = {};
  rw.upgrade = true;
  EXPECT_EQ(response_fields("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                            "Connection: upgrade\r\n\r\n",
                            rw),
            "<refused>");
}

TEST(HeadRewriteTest, ResponseWithoutAReasonGetsTheStandardOne) {
  EXPECT_EQ(response("HTTP/1.1 201 \r\nContent-Length: 0\r\n\r\n", ResponseRewrite{}),
            "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
}

TEST(HeadRewriteTest, UsableRequestIds) {
  EXPECT_TRUE(usable_request_id("req-123"));
  EXPECT_FALSE(usable_request_id(""));
  EXPECT_FALSE(usable_request_id("a b"));
  EXPECT_FALSE(usable_request_id(std::string(129, 'a')));
  EXPECT_TRUE(usable_request_id(std::string(128, 'a')));
}

}  // namespace
}  // namespace sluice::http1
