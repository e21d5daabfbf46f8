// SPDX-License-Identifier: Apache-2.0
// The real binary in front of real demo backends: docs/behaviour.md "Routing", "Proxy hygiene",
// keep-alive, pipelining and balancing.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using http::verb;
using nlohmann::json;

class RoutingTest : public ::testing::Test, protected ProxyFixtureBase {};

TEST_F(RoutingTest, RoutesInOrderWithHostMethodsAndSegmentAwarePrefix) {
  DemoBackend other;
  config["backends"]["other"] = {{"endpoints", {other.endpoint()}}};
  config["routes"] = json::array({
      {{"name", "host"}, {"prefix", "/"}, {"host", "other.example"}, {"backend", "other"}},
      {{"name", "api"},
       {"prefix", "/api"},
       {"backend", "other"},
       {"strip_prefix", true},
       {"methods", {"GET", "HEAD"}}},
      {{"name", "rest"}, {"prefix", "/"}, {"backend", "demo"}},
  });
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  const std::string other_port = std::to_string(other.port());
  const std::string demo_port = std::to_string(backend.port());

  // strip_prefix: /api/headers reaches the backend as /headers, the query kept.
  Response res = client.get("/api/headers?q=1");
  ASSERT_EQ(res.result_int(), 200);
  EXPECT_EQ(res["X-Backend-Port"], other_port);
  EXPECT_EQ(json::parse(res.body())["target"], "/headers?q=1");
  // Segment-aware: /apix is not under /api.
  res = client.get("/apix");
  EXPECT_EQ(res["X-Backend-Port"], demo_port);
  // /api alone becomes "/".
  res = client.get("/api");
  EXPECT_EQ(res["X-Backend-Port"], other_port);
  // Host matching is case-insensitive and ignores the port; it wins because it comes first.
  res = client.get("/ok", {{"Host", "Other.Example:8080"}});
  EXPECT_EQ(res["X-Backend-Port"], other_port);
  // A method the /api route does not allow: the next matching route takes it.
  res = client.request(verb::post, "/api/echo", {}, "x");
  EXPECT_EQ(res["X-Backend-Port"], demo_port);
  EXPECT_EQ(res.result_int(), 404);  // the backend's: it has no /api/echo
  // Keep-alive survived all of the above.
  EXPECT_EQ(client.get("/ok").result_int(), 200);
}

TEST_F(RoutingTest, MethodNotAllowedIs405WithAllowAndNeverForwarded) {
  config["routes"] = json::array({
      {{"name", "read"}, {"prefix", "/"}, {"backend", "demo"}, {"methods", {"GET"}}},
      {{"name", "write"}, {"prefix", "/echo"}, {"backend", "demo"}, {"methods", {"PUT"}}},
  });
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  Response res = client.request(verb::post, "/echo", {}, "x");
  EXPECT_EQ(res.result_int(), 405);
  EXPECT_EQ(error_code(res), "method_not_allowed");
  EXPECT_EQ(res["Allow"], "GET, HEAD, PUT");
  EXPECT_EQ(res[http::field::content_type], "application/json");
  EXPECT_TRUE(res.keep_alive());
  EXPECT_EQ(res.count("X-Backend-Port"), 0U);
  // HEAD is allowed wherever GET is.
  client.send_raw("HEAD /ok HTTP/1.1\r\nHost: a\r\n\r\n");
  const auto head = client.read_response(kDefaultTimeout, true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->result_int(), 200);
  EXPECT_EQ(client.request(verb::put, "/echo", {}, "x").body(), "x");
}

TEST_F(RoutingTest, NoMatchingRouteIs404Json) {
  config["routes"] = json::array({{{"name", "api"}, {"prefix", "/api"}, {"backend", "demo"}}});
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  const Response res = client.get("/other");
  EXPECT_EQ(res.result_int(), 404);
  EXPECT_EQ(error_code(res), "no_route");
  EXPECT_TRUE(res.keep_alive());
  EXPECT_EQ(client.get("/api").result_int(), 404);  // the backend's own 404, proxied
  EXPECT_EQ(client.get("/api/x").result_int(), 404);
}

TEST_F(RoutingTest, StripsHopByHopAndSetsForwardingHeaders) {
  config["http"] = {{"trusted_proxies", {"127.0.0.1/32"}}};
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  const json seen = echoed_request(client, "/headers",
                                   {{"Host", "api.example:81"},
                                    {"Connection", "keep-alive, X-Secret"},
                                    {"X-Secret", "drop me"},
                                    {"Keep-Alive", "timeout=5"},
                                    {"Proxy-Authorization", "Basic x"},
                                    {"TE", "trailers"},
                                    {"Upgrade", "h2c"},
                                    {"X-Forwarded-For", "203.0.113.7"},
                                    {"X-Request-Id", "req-123"},
                                    {"X-Custom", "kept"}});
  EXPECT_EQ(header_values(seen, "Host"), std::vector<std::string>{"api.example:81"});
  for (const char* gone :
       {"Connection", "X-Secret", "Keep-Alive", "Proxy-Authorization", "TE", "Upgrade"}) {
    EXPECT_TRUE(header_values(seen, gone).empty()) << gone;
  }
  EXPECT_EQ(header_values(seen, "X-Forwarded-For"),
            std::vector<std::string>{"203.0.113.7, 127.0.0.1"});
  EXPECT_EQ(header_values(seen, "X-Forwarded-Proto"), std::vector<std::string>{"http"});
  EXPECT_EQ(header_values(seen, "X-Request-Id"), std::vector<std::string>{"req-123"});
  EXPECT_EQ(header_values(seen, "X-Custom"), std::vector<std::string>{"kept"});

  // No X-Request-Id: one is generated, sent upstream, and differs per request.
  const json first = echoed_request(client, "/headers");
  const json second = echoed_request(client, "/headers");
  ASSERT_EQ(header_values(first, "X-Request-Id").size(), 1U);
  ASSERT_EQ(header_values(second, "X-Request-Id").size(), 1U);
  EXPECT_FALSE(header_values(first, "X-Request-Id")[0].empty());
  EXPECT_NE(header_values(first, "X-Request-Id"), header_values(second, "X-Request-Id"));
  EXPECT_EQ(header_values(first, "X-Forwarded-For"), std::vector<std::string>{"127.0.0.1"});
}

TEST_F(RoutingTest, ResponseHopByHopHeadersAreStrippedToo) {
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  // /close answers with Connection: close: the gateway ends ITS upstream connection but keeps
  // the client's, which it manages itself.
  const Response res = client.get("/close");
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body(), "bye\n");
  EXPECT_TRUE(res.keep_alive());
  EXPECT_EQ(client.get("/ok").result_int(), 200);
}

TEST_F(RoutingTest, PipelinedRequestsAreAnsweredInOrder) {
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  client.send_raw(
      "GET /slow/150 HTTP/1.1\r\nHost: a\r\n\r\n"
      "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
      "GET /status/201 HTTP/1.1\r\nHost: a\r\n\r\n"
      "GET /bytes/3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  const auto first = client.read_response();
  const auto second = client.read_response();
  const auto third = client.read_response();
  const auto fourth = client.read_response();
  ASSERT_TRUE(first && second && third && fourth);
  EXPECT_EQ(first->result_int(), 200);
  EXPECT_EQ(second->body(), "hello");
  EXPECT_EQ(third->result_int(), 201);
  EXPECT_EQ(fourth->body().size(), 3U);
  EXPECT_FALSE(fourth->keep_alive());
  EXPECT_TRUE(client.closed_by_peer());
}

TEST_F(RoutingTest, Http10ClientsGetHttp10AndClose) {
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  client.send_raw("GET /ok HTTP/1.0\r\n\r\n");
  const std::string raw = client.read_raw_until_close();
  EXPECT_TRUE(raw.starts_with("HTTP/1.0 200")) << raw;
}

TEST_F(RoutingTest, HeadResponsesCarryNoBody) {
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  client.send_raw("HEAD /bytes/100 HTTP/1.1\r\nHost: a\r\n\r\n");
  const auto head = client.read_response(kDefaultTimeout, true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->result_int(), 200);
  EXPECT_EQ((*head)[http::field::content_length], "100");
  EXPECT_EQ(client.get("/ok").result_int(), 200);  // no stray body bytes in between
}

TEST_F(RoutingTest, BalancesRoundRobinAndLeastRequestAndRandomOverEndpoints) {
  DemoBackend second;
  for (const char* balance : {"round_robin", "least_request", "random"}) {
    SCOPED_TRACE(balance);
    config["threads"] = 1;
    config["backends"]["demo"]["endpoints"] = {backend.endpoint(), second.endpoint()};
    config["backends"]["demo"]["balance"] = balance;
    SluiceProcess gateway(config);
    HttpClient client(gateway.proxy_port());
    std::map<std::string, int> per_port;
    for (int i = 0; i < 40; ++i) {
      const Response res = client.get("/ok");
      ASSERT_EQ(res.result_int(), 200);
      ++per_port[std::string(res["X-Backend-Port"])];
    }
    ASSERT_EQ(per_port.size(), 2U);
    if (std::string(balance) == "round_robin") {
      EXPECT_EQ(per_port.begin()->second, 20);
    } else {
      EXPECT_GE(per_port.begin()->second, 5);  // both get a real share
      EXPECT_GE(per_port.rbegin()->second, 5);
    }
  }
}

TEST_F(RoutingTest, LeastRequestAvoidsTheBusyEndpoint) {
  DemoBackend second;
  config["threads"] = 1;
  config["backends"]["demo"]["endpoints"] = {backend.endpoint(), second.endpoint()};
  config["backends"]["demo"]["balance"] = "least_request";
  SluiceProcess gateway(config);
  // Occupy one endpoint with a slow request, then every quick request goes to the other.
  HttpClient slow(gateway.proxy_port());
  slow.send_raw("GET /slow/1500 HTTP/1.1\r\nHost: a\r\n\r\n");
  // The gateway's first request: the one active upstream connection can only be its.
  ASSERT_TRUE(wait_until("the slow request to be in flight upstream", [&] {
    return metric_value(gateway, "sluice_upstream_connections",
                        {{"backend", "demo"}, {"state", "active"}}) == 1;
  }));
  HttpClient probe(gateway.proxy_port());
  std::set<std::string> ports;
  for (int i = 0; i < 10; ++i) {
    ports.insert(std::string(probe.get("/ok")["X-Backend-Port"]));
  }
  const auto slow_res = slow.read_response();
  ASSERT_TRUE(slow_res);
  ASSERT_EQ(ports.size(), 1U);
  EXPECT_NE(*ports.begin(), std::string((*slow_res)["X-Backend-Port"]));
}

}  // namespace
}  // namespace sluice::testing
