// SPDX-License-Identifier: Apache-2.0
// Every kind of bad client input, with its status code, and the downstream timeouts. Requests
// that must never be forwarded are checked against the backend's request counter (/count is
// not used: the RawPeer counts request heads).
#include <gtest/gtest.h>

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/raw_peer.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

/// The gateway's answer to `raw` on a fresh connection, read until the gateway closes.
std::string answer_to(std::uint16_t port, std::string_view raw) {
  HttpClient client(port);
  client.send_raw(raw);
  return client.read_raw_until_close();
}

class BadInputTest : public ::testing::Test {
 protected:
  // An upstream that answers 200 to anything and counts request heads.
  RawPeer upstream{RawPeer::Mode::kRespondOkThenCloseIdle, milliseconds(5000)};
  json config = [this] {
    json c = minimal_gateway_config({upstream.endpoint()});
    c["http"] = {{"max_header_bytes", 4096}, {"max_body_bytes", 1000}};
    return c;
  }();
};

TEST_F(BadInputTest, FramingConflictsAre400AndNeverForwarded) {
  SluiceProcess gateway(config);
  const std::pair<const char*, std::string> cases[] = {
      {"CL and TE",
       "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
       "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
      {"two CLs",
       "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n"
       "\r\nhello!"},
      {"TE not chunked", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\nxx"},
      {"bad CL", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5x\r\n\r\nhello"},
      {"garbage", "HELLO\r\n\r\n"},
      {"bad version", "GET /x HTTP/9.9\r\nHost: a\r\n\r\n"},
      {"space in name", "GET /x HTTP/1.1\r\nHost: a\r\nBad Name: v\r\n\r\n"},
      {"bad chunk size",
       "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
       "zz\r\nhello\r\n0\r\n\r\n"},
  };
  for (const auto& [name, raw] : cases) {
    SCOPED_TRACE(name);
    const std::string answer = answer_to(gateway.proxy_port(), raw);
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 400")) << answer;
    EXPECT_NE(answer.find("\"error\":\"bad_request\""), std::string::npos) << answer;
    EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  }
  // The chunk-size case reached the upstream only as far as its head; the others never did.
  EXPECT_LE(upstream.requests(), 1U);
}

TEST_F(BadInputTest, OversizedHeaderIs431) {
  SluiceProcess gateway(config);
  const std::string raw =
      "GET /x HTTP/1.1\r\nHost: a\r\nX-Big: " + std::string(5000, 'b') + "\r\n\r\n";
  const std::string answer = answer_to(gateway.proxy_port(), raw);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 431")) << answer;
  EXPECT_NE(answer.find("header_too_large"), std::string::npos);
  EXPECT_EQ(upstream.requests(), 0U);
}

TEST_F(BadInputTest, OversizedContentLengthIs413BeforeAnyByteIsForwarded) {
  SluiceProcess gateway(config);
  const std::string answer = answer_to(
      gateway.proxy_port(), "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1001\r\n\r\n");
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 413")) << answer;
  EXPECT_NE(answer.find("payload_too_large"), std::string::npos);
  EXPECT_EQ(upstream.requests(), 0U);
}

TEST_F(BadInputTest, OversizedChunkedBodyIs413AsItStreams) {
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  client.send_raw("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
  for (int i = 0; i < 3; ++i) {  // 3 x 400 bytes: the third chunk crosses 1000
    client.send_raw("190\r\n" + std::string(400, 'c') + "\r\n");
  }
  const std::string answer = client.read_raw_until_close();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 413")) << answer;
}

TEST_F(BadInputTest, BodiesWithinTheLimitPassBothFramings) {
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  EXPECT_EQ(client.request(http::verb::post, "/x", {}, std::string(1000, 'a')).result_int(), 200);
  client.send_raw(
      "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3e8\r\n" +
      std::string(1000, 'a') + "\r\n0\r\n\r\n");
  const auto res = client.read_response();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result_int(), 200);
}

TEST_F(BadInputTest, SlowHeadersGet408ThenClose) {
  config["http"]["header_timeout_ms"] = 300;
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  const auto started = Clock::now();
  client.send_raw("GET /x HTTP/1.1\r\nHost: a\r\n");  // never finished (slowloris)
  const std::string answer = client.read_raw_until_close();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 408")) << answer;
  EXPECT_NE(answer.find("header_timeout"), std::string::npos);
  EXPECT_LT(Clock::now() - started, milliseconds(3000));
  EXPECT_EQ(upstream.requests(), 0U);
}

TEST_F(BadInputTest, IdleKeepAliveConnectionsAreClosedSilently) {
  config["http"]["idle_timeout_ms"] = 300;
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  EXPECT_EQ(client.get("/x").result_int(), 200);
  const auto started = Clock::now();
  EXPECT_EQ(client.read_raw_until_close(), "");  // closed without a response
  EXPECT_GE(Clock::now() - started, milliseconds(200));
  EXPECT_LT(Clock::now() - started, milliseconds(3000));
}

TEST_F(BadInputTest, ExpectContinueGetsA100BeforeTheBodyIsSent) {
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  client.send_raw(
      "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  // Read the interim response before sending the body, as a curl-like client would.
  http::response_parser<http::empty_body> interim;
  boost::beast::flat_buffer buffer;
  client.stream().expires_after(kDefaultTimeout);
  http::read_header(client.stream(), buffer, interim);
  EXPECT_EQ(interim.get().result_int(), 100);
  EXPECT_EQ(buffer.size(), 0U);
  client.send_raw("hello");
  const auto res = client.read_response();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result_int(), 200);
}

TEST_F(BadInputTest, Expect100ContinueOver413IsRefusedWithoutReadingTheBody) {
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  client.send_raw(
      "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n");
  const std::string answer = client.read_raw_until_close();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 413")) << answer;
}

}  // namespace
}  // namespace sluice::testing
