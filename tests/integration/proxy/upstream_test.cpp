// SPDX-License-Identifier: Apache-2.0
// Upstream behaviour against real misbehaving peers: pooling, stale connections, connect
// failures, timeouts, resets before and during the response.
#include <gtest/gtest.h>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/raw_peer.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using Mode = RawPeer::Mode;

json config_for(const std::vector<std::string>& endpoints, int timeout_ms = 5000) {
  json c = minimal_gateway_config(endpoints);
  c["threads"] = 1;  // one pool: reuse is deterministic
  c["backends"]["demo"]["timeout_ms"] = timeout_ms;
  return c;
}

TEST(UpstreamTest, PooledConnectionsAreReusedAcrossRequestsAndClients) {
  RawPeer upstream(Mode::kRespondOkThenCloseIdle, milliseconds(10000));
  SluiceProcess gateway(config_for({upstream.endpoint()}));
  for (int c = 0; c < 3; ++c) {
    HttpClient client(gateway.proxy_port());
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(client.get("/x").result_int(), 200);
    }
  }
  EXPECT_EQ(upstream.requests(), 15U);
  EXPECT_EQ(upstream.accepted(), 1U);
}

TEST(UpstreamTest, MaxIdlePerEndpointZeroDisablesPooling) {
  RawPeer upstream(Mode::kRespondOkThenCloseIdle, milliseconds(10000));
  json config = config_for({upstream.endpoint()});
  config["backends"]["demo"]["max_idle_per_endpoint"] = 0;
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(client.get("/x").result_int(), 200);
  }
  EXPECT_EQ(upstream.accepted(), 3U);
}

TEST(UpstreamTest, ConnectionsTheUpstreamClosedAreNotUsedAgain) {
  RawPeer upstream(Mode::kRespondOkThenCloseIdle, milliseconds(100));
  SluiceProcess gateway(config_for({upstream.endpoint()}));
  HttpClient client(gateway.proxy_port());
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(client.get("/x").result_int(), 200);
    ASSERT_EQ(client.request(http::verb::post, "/x", {}, "body").result_int(), 200);
    // The pooled connection idles 100 ms, then the upstream closes its side (FIN).
    ASSERT_TRUE(upstream.wait_for_idle_closes(i + 1))
        << "the upstream never closed connection " << i + 1 << " for idleness";
  }
  EXPECT_EQ(upstream.requests(), 6U);
  EXPECT_EQ(upstream.accepted(), 3U);
}

TEST(UpstreamTest, ConnectRefusedIs502) {
  RawPeer refused(Mode::kRefuse);
  SluiceProcess gateway(config_for({refused.endpoint()}));
  HttpClient client(gateway.proxy_port());
  const Response res = client.get("/x");
  EXPECT_EQ(res.result_int(), 502);
  EXPECT_EQ(error_code(res), "upstream_connect_error");
  EXPECT_TRUE(res.keep_alive());
  EXPECT_EQ(client.get("/x").result_int(), 502);
}

TEST(UpstreamTest, ConnectFailureFallsBackToAnotherEndpoint) {
  RawPeer refused(Mode::kRefuse);
  DemoBackend healthy;
  json config = config_for({refused.endpoint(), healthy.endpoint()});
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(client.get("/ok").result_int(), 200);
  }
}

TEST(UpstreamTest, NoResponseHeadWithinTimeoutIs504) {
  RawPeer upstream(Mode::kNeverAnswer);
  SluiceProcess gateway(config_for({upstream.endpoint()}, 300));
  HttpClient client(gateway.proxy_port());
  for (const bool with_body : {false, true}) {
    const auto started = Clock::now();
    const Response res =
        with_body ? client.request(http::verb::post, "/x", {}, "payload") : client.get("/x");
    const auto took = Clock::now() - started;
    EXPECT_EQ(res.result_int(), 504);
    EXPECT_EQ(error_code(res), "upstream_timeout");
    EXPECT_GE(took, milliseconds(250));
    EXPECT_LT(took, milliseconds(3000));
  }
}

TEST(UpstreamTest, ResetOrCloseBeforeTheResponseIs502) {
  for (const Mode mode : {Mode::kResetAfterRequest, Mode::kCloseAfterRequest}) {
    RawPeer upstream(mode);
    SluiceProcess gateway(config_for({upstream.endpoint()}));
    HttpClient client(gateway.proxy_port());
    const Response res = client.request(http::verb::post, "/x", {}, "payload");
    EXPECT_EQ(res.result_int(), 502);
    EXPECT_EQ(error_code(res), "upstream_reset");
    // A fresh connection is never retried (it was not stale): exactly one request upstream.
    EXPECT_EQ(upstream.requests(), 1U);
  }
}

TEST(UpstreamTest, ResetMidBodyAbortsTheDownstreamResponseCleanly) {
  for (const Mode mode : {Mode::kPartialBodyThenReset, Mode::kPartialBodyThenClose}) {
    RawPeer upstream(mode);
    SluiceProcess gateway(config_for({upstream.endpoint()}));
    HttpClient client(gateway.proxy_port());
    client.send_raw("GET /x HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n");
    const auto started = Clock::now();
    const std::string raw = client.read_raw_until_close();
    EXPECT_LT(Clock::now() - started, milliseconds(3000));
    EXPECT_TRUE(raw.starts_with("HTTP/1.1 200")) << raw.substr(0, 200);
    EXPECT_NE(raw.find("Content-Length: 1000000"), std::string::npos);
    const std::size_t body = raw.size() - (raw.find("\r\n\r\n") + 4);
    EXPECT_EQ(body, 1000U);  // what arrived, then the close: no second response appended
    EXPECT_EQ(raw.find("HTTP/1.1", 1), std::string::npos);
  }
}

TEST(UpstreamTest, TheAccessLogRecordsEachOutcome) {
  RawPeer refused(Mode::kRefuse);
  DemoBackend healthy;
  json config = config_for({healthy.endpoint()});
  config["backends"]["down"] = {{"endpoints", {refused.endpoint()}}};
  config["routes"] = json::array({{{"name", "down"}, {"prefix", "/down"}, {"backend", "down"}},
                                  {{"name", "all"}, {"prefix", "/"}, {"backend", "demo"}}});
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  ASSERT_EQ(client.get("/ok?x=1", {{"X-Request-Id", "log-1"}}).result_int(), 200);
  ASSERT_EQ(client.get("/down/x", {{"X-Request-Id", "log-2"}}).result_int(), 502);
  std::string line;
  ASSERT_TRUE(gateway.process().wait_for_line("\"request_id\":\"log-1\"", kDefaultTimeout, &line));
  json entry = json::parse(line);
  EXPECT_EQ(entry["method"], "GET");
  EXPECT_EQ(entry["path"], "/ok");
  EXPECT_EQ(entry["route"], "all");
  EXPECT_EQ(entry["backend"], "demo");
  EXPECT_EQ(entry["endpoint"], healthy.endpoint());
  EXPECT_EQ(entry["status"], 200);
  // The user is the client IP here, written only as a 12-hex-digit keyed hash.
  ASSERT_TRUE(entry["user"].is_string());
  EXPECT_EQ(entry["user"].get<std::string>().size(), 12U);
  EXPECT_EQ(entry["user"].get<std::string>().find("127.0.0.1"), std::string::npos);
  EXPECT_EQ(entry["limit"], "none");
  EXPECT_EQ(entry["breaker"], "pass");
  EXPECT_TRUE(entry["upstream_ms"].is_number());
  EXPECT_GT(entry["bytes_out"].get<int>(), 0);
  ASSERT_TRUE(gateway.process().wait_for_line("\"request_id\":\"log-2\"", kDefaultTimeout, &line));
  entry = json::parse(line);
  EXPECT_EQ(entry["status"], 502);
  EXPECT_EQ(entry["route"], "down");
}

}  // namespace
}  // namespace sluice::testing
