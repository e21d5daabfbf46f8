// SPDX-License-Identifier: Apache-2.0
// /admin/backends: the live breaker window, breaker re-tuning and endpoint replacement, each
// visible in the next request's behaviour.
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/admin/admin_fixture.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

class AdminBackendsTest : public AdminFixture {
 protected:
  void SetUp() override {
    config.erase("limits");
    config["routes"][0].erase("limit");
  }

  /// GET /admin/backends once the window of `backend` holds `requests` (an outcome is recorded
  /// just after its response is written, so the last one may lag the client by a moment); the
  /// last body either way, with a test failure if the window never got there.
  static json backends_when(AdminClient& client, const std::string& backend, int requests) {
    json body;
    EXPECT_TRUE(wait_until(std::to_string(requests) + " requests in the window of " + backend, [&] {
      body = client.get("/admin/backends").body;
      return body[backend]["window"]["requests"] == requests;
    })) << body.dump();
    return body;
  }
};

TEST_F(AdminBackendsTest, ShowsEndpointsTuningAndTheWindowTheBreakerDecidesOn) {
  auto gateway = start();
  auto client = admin(*gateway);
  HttpClient proxy(gateway->proxy_port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(proxy.get("/ok").result_int(), 200);
  }
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(proxy.get("/status/500").result_int(), 500);
  }
  const json body = backends_when(client, "demo", 5);
  const json& demo = body["demo"];
  EXPECT_EQ(demo["endpoints"], json::array({backend.endpoint()}));
  EXPECT_EQ(demo["balance"], "round_robin");
  EXPECT_EQ(demo["breaker"], json::parse(R"({"enabled":true,"k":1.5,"protection":5.0,
      "window_ms":10000,"buckets":40,"failure_statuses":[500,502,503,504],
      "failure_grpc_statuses":[14,4,8],"mode":"enforce","slow_ms":0})"));
  EXPECT_EQ(demo["window"], json::parse(R"({"requests":5,"accepts":3,"drop_probability":0.0,
      "drops":0,"shadow_drops":0})"));
  EXPECT_FALSE(demo.contains("concurrency")) << "no limit configured";
  // The same numbers as the scrape.
  const Scrape scrape = scrape_metrics(*gateway);
  EXPECT_EQ(scrape.value("sluice_breaker_window_requests", {{"backend", "demo"}}), 5);
  EXPECT_EQ(scrape.value("sluice_breaker_window_accepts", {{"backend", "demo"}}), 3);
}

TEST_F(AdminBackendsTest, RetuningTheBreakerIsVisibleAndChangesWhatItDoes) {
  config["backends"]["demo"]["breaker"] = {{"enabled", false}};
  auto gateway = start();
  auto client = admin(*gateway);
  HttpClient proxy(gateway->proxy_port());
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(proxy.get("/status/500").result_int(), 500);  // off: never dropped
  }
  // Partial: only what the body names changes.
  const auto tuned =
      client.put("/admin/backends/demo/breaker", {{"enabled", true}, {"protection", 0}});
  ASSERT_EQ(tuned.status, 200U) << tuned.raw.body();
  EXPECT_EQ(tuned.body["enabled"], true);
  EXPECT_EQ(tuned.body["protection"], 0.0);
  EXPECT_EQ(tuned.body["k"], 1.5);
  const json window = backends_when(client, "demo", 20)["demo"]["window"];
  EXPECT_EQ(window["requests"], 20);  // the counts survived the re-tuning
  EXPECT_EQ(window["accepts"], 0);
  EXPECT_GT(window["drop_probability"].get<double>(), 0.9);  // (20 - 0) / 21
  int dropped = 0;
  for (int i = 0; i < 20; ++i) {
    const Response res = proxy.get("/status/500");
    if (res.result_int() == 503) {
      ++dropped;
      EXPECT_EQ(res[http::field::retry_after], "1");
    }
  }
  EXPECT_GT(dropped, 10);
  ASSERT_EQ(client.put("/admin/backends/demo/breaker", {{"enabled", false}}).status, 200U);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(proxy.get("/status/500").result_int(), 500);
  }
  EXPECT_EQ(client.get("/admin/backends/demo/breaker").body["enabled"], false);
}

TEST_F(AdminBackendsTest, BadBreakerTuningIsRejectedAndChangesNothing) {
  auto gateway = start();
  auto client = admin(*gateway);
  const json before = client.get("/admin/backends").body;
  const auto expect_rejected = [&](const json& body, const char* field) {
    const auto reply = client.put("/admin/backends/demo/breaker", body);
    EXPECT_EQ(reply.status, 400U) << body;
    EXPECT_EQ(reply.body["field"], field) << reply.raw.body();
  };
  expect_rejected({{"k", 0.5}}, "backends.demo.breaker.k");
  expect_rejected({{"k", "high"}}, "backends.demo.breaker.k");
  expect_rejected({{"failure_statuses", {500, 700}}}, "backends.demo.breaker.failure_statuses[1]");
  expect_rejected({{"buckets", 7}}, "backends.demo.breaker.buckets");
  expect_rejected({{"enabled", true}, {"threshold", 3}}, "backends.demo.breaker.threshold");
  EXPECT_EQ(client.get("/admin/backends").body, before);
  EXPECT_EQ(client.put("/admin/backends/nope/breaker", {{"k", 2}}).status, 404U);
}

TEST_F(AdminBackendsTest, ReplacingTheEndpointsRedirectsTheNextRequests) {
  DemoBackend other;
  auto gateway = start();
  auto client = admin(*gateway);
  HttpClient proxy(gateway->proxy_port());
  EXPECT_EQ(proxy.get("/ok")["X-Backend-Port"], std::to_string(backend.port()));
  const auto replaced =
      client.put("/admin/backends/demo/endpoints", {{"endpoints", {other.endpoint()}}});
  ASSERT_EQ(replaced.status, 200U) << replaced.raw.body();
  EXPECT_EQ(replaced.body, json({{"endpoints", {other.endpoint()}}}));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(proxy.get("/ok")["X-Backend-Port"], std::to_string(other.port()));
  }
  EXPECT_EQ(client.get("/admin/backends").body["demo"]["endpoints"],
            json::array({other.endpoint()}));
}

TEST_F(AdminBackendsTest, BadEndpointListsAreRejectedAndTrafficStays) {
  auto gateway = start();
  auto client = admin(*gateway);
  HttpClient proxy(gateway->proxy_port());
  const auto expect_rejected = [&](const std::string& body, const char* error, const char* field) {
    const auto reply = client.put_text("/admin/backends/demo/endpoints", body);
    EXPECT_EQ(reply.status, 400U) << body;
    EXPECT_EQ(reply.body["error"], error) << reply.raw.body();
    EXPECT_EQ(reply.body["field"], field) << reply.raw.body();
  };
  expect_rejected(R"({"endpoints": []})", "must list at least one endpoint",
                  "backends.demo.endpoints");
  expect_rejected(R"({"endpoints": ["nowhere"]})", "must be host:port (e.g. 127.0.0.1:9001)",
                  "backends.demo.endpoints[0]");
  expect_rejected(R"({"endpoints": ["127.0.0.1:1", "127.0.0.1:1"]})", "duplicate endpoint",
                  "backends.demo.endpoints[1]");
  expect_rejected(R"({"endpoints": ["127.0.0.1:1"], "balance": "random"})", "unknown field",
                  "backends.demo.balance");
  expect_rejected(R"({})", "is required", "backends.demo.endpoints");
  EXPECT_EQ(proxy.get("/ok")["X-Backend-Port"], std::to_string(backend.port()));
  EXPECT_EQ(client.put("/admin/backends/nope/endpoints", {{"endpoints", {"127.0.0.1:1"}}}).status,
            404U);
}

}  // namespace
}  // namespace sluice::testing
