// SPDX-License-Identifier: Apache-2.0
// The adaptive breaker through the real binary (docs/behaviour.md "Breakers" and "Precise
// semantics"): a backend that fails gets a growing share of its requests dropped with 503 at once,
// other backends are untouched, the breaker closes within about a window of the backend healing,
// and a disabled breaker never drops. Drops are random (p = max(0, (requests - protection -
// k*accepts) / (requests + 1))), so these tests assert only what holds with overwhelming
// probability, or what the formula makes certain (the first protection + 1 requests always pass).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/raw_peer.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr double kK = 1.5;
constexpr double kProtection = 5;

json breaker_params(bool enabled, int window_ms = 2000, int buckets = 20) {
  return {{"enabled", enabled},        {"k", kK},
          {"protection", kProtection}, {"window_ms", window_ms},
          {"buckets", buckets},        {"failure_statuses", {500, 502, 503, 504}}};
}

/// Backend "demo" (the failing one, route "all" with prefix "/") with the breaker above, and
/// backend "healthy" behind route "healthy" (prefix /healthy, stripped).
json breaker_config(const std::string& failing, const std::string& healthy, bool enabled = true,
                    int window_ms = 2000) {
  json c = minimal_gateway_config({failing});
  c["backends"]["demo"]["breaker"] = breaker_params(enabled, window_ms);
  c["backends"]["healthy"] = {{"endpoints", {healthy}}};
  c["routes"] = json::array({
      {{"name", "healthy"}, {"prefix", "/healthy"}, {"backend", "healthy"}, {"strip_prefix", true}},
      {{"name", "all"}, {"prefix", "/"}, {"backend", "demo"}},
  });
  return c;
}

/// A request the breaker dropped: the gateway's own 503 backend_unavailable.
bool is_drop(const Response& res) {
  return res.result_int() == 503 && error_code(res) == "backend_unavailable";
}

/// Everything docs/behaviour.md "Breakers" says about a dropped request's reply.
void expect_drop_reply(const Response& res, const std::string& backend) {
  EXPECT_EQ(res.result_int(), 503);
  EXPECT_EQ(res[http::field::content_type], "application/json");
  EXPECT_EQ(res[http::field::retry_after], "1");
  EXPECT_EQ(res.count("X-Backend-Port"), 0U) << "a dropped request reached the backend";
  EXPECT_TRUE(res.keep_alive());
  EXPECT_EQ(json::parse(res.body(), nullptr, false),
            (json{{"error", "backend_unavailable"}, {"backend", backend}}))
      << res.body();
}

/// Sends `n` GETs of `target` and returns how many were dropped; every request that was not
/// dropped must have reached the backend and come back with `passed_status`.
int send_counting_drops(HttpClient& client, std::string_view target, int n, unsigned passed_status,
                        const std::string& backend = "demo") {
  int drops = 0;
  for (int i = 0; i < n; ++i) {
    const Response res = client.get(target);
    if (is_drop(res)) {
      ++drops;
      expect_drop_reply(res, backend);
    } else {
      EXPECT_EQ(res.result_int(), passed_status) << target << ": " << res.body();
      EXPECT_EQ(res.count("X-Backend-Port"), 1U);
    }
  }
  return drops;
}

class BreakerTest : public ::testing::Test {
 protected:
  DemoBackend failing_;  // answers /status/500 with 500, /ok with 200
  DemoBackend healthy_;
};

TEST_F(BreakerTest, DropsAGrowingShareOfRequestsToAFailingBackend) {
  SluiceProcess gateway(breaker_config(failing_.endpoint(), healthy_.endpoint()));
  HttpClient client(gateway.proxy_port());
  // With at most `protection` requests in the window p is 0: the first six always pass.
  const int early = send_counting_drops(client, "/status/500", 6, 500);
  EXPECT_EQ(early, 0);
  const int middle = send_counting_drops(client, "/status/500", 200, 500);
  // After ~50 failures sent, p is about 0.9: most of the next hundred are dropped.
  const int late = send_counting_drops(client, "/status/500", 100, 500);
  EXPECT_GE(late, 50) << "early " << early << "/6, middle " << middle << "/200";
  EXPECT_GT(late / 100.0, early / 6.0);
  const int drops = early + middle + late;
  const int sent = 306 - drops;

  // Every drop was counted, and the window gauges describe what was sent: drops never enter
  // the window, and nothing was an accept.
  const Labels demo{{"backend", "demo"}};
  const Scrape s = scrape_until(gateway, "every drop counted", [&](const Scrape& t) {
    return t.value("sluice_breaker_drops_total", demo) >= drops;
  });
  EXPECT_EQ(s.value("sluice_breaker_drops_total", demo), drops) << s.text();
  const double p = s.value("sluice_breaker_drop_probability", demo);
  const double requests = s.value("sluice_breaker_window_requests", demo);
  const double accepts = s.value("sluice_breaker_window_accepts", demo);
  EXPECT_GT(p, 0.0) << s.text();
  EXPECT_LT(p, 1.0);
  EXPECT_GT(requests, kProtection);
  EXPECT_LE(requests, sent);  // less only if the 2 s window moved on meanwhile
  EXPECT_EQ(accepts, 0);
  // The gauge is the formula over the window (a bucket may have left between two reads).
  EXPECT_NEAR(p, std::max(0.0, (requests - kProtection - kK * accepts) / (requests + 1)), 0.05);
}

TEST_F(BreakerTest, LeavesOtherBackendsAloneWhileOneIsFailing) {
  SluiceProcess gateway(breaker_config(failing_.endpoint(), healthy_.endpoint()));
  HttpClient client(gateway.proxy_port());
  HttpClient other(gateway.proxy_port());
  int drops = 0;
  for (int round = 0; round < 30; ++round) {
    drops += send_counting_drops(client, "/status/500", 10, 500);
    const Response res = other.get("/healthy/ok");
    ASSERT_EQ(res.result_int(), 200) << "round " << round << ": " << res.body();
    EXPECT_EQ(res["X-Backend-Port"], std::to_string(healthy_.port()));
  }
  EXPECT_GE(drops, 1);  // the failing backend's breaker was open meanwhile
  // The outcome is recorded just after the response is written: wait for the last one.
  const Scrape s = scrape_until(gateway, "the drops and the healthy accepts", [&](const Scrape& t) {
    return t.value("sluice_breaker_drops_total", {{"backend", "demo"}}) >= drops &&
           t.value("sluice_breaker_window_accepts", {{"backend", "healthy"}}) >= 30;
  });
  EXPECT_EQ(s.value("sluice_breaker_drops_total", {{"backend", "healthy"}}), 0);
  EXPECT_EQ(s.value("sluice_breaker_drop_probability", {{"backend", "healthy"}}), 0);
  EXPECT_EQ(s.value("sluice_breaker_window_accepts", {{"backend", "healthy"}}), 30);
  EXPECT_GT(s.value("sluice_breaker_drop_probability", {{"backend", "demo"}}), 0);
}

TEST_F(BreakerTest, AnswersADropAtOnceWithoutWaitingForTheBackend) {
  // A 10 s window, so the failures stay while slow requests pass.
  SluiceProcess gateway(breaker_config(failing_.endpoint(), healthy_.endpoint(), true, 10000));
  HttpClient client(gateway.proxy_port());
  ASSERT_GE(send_counting_drops(client, "/status/500", 200, 500), 1);
  // The breaker is per backend: a slow path on it is dropped just as well, and a drop does not
  // wait the 300 ms the backend would take.
  bool dropped = false;
  for (int i = 0; i < 20 && !dropped; ++i) {
    const auto started = Clock::now();
    const Response res = client.get("/slow/300");
    const auto took = Clock::now() - started;
    dropped = is_drop(res);
    if (dropped) {
      expect_drop_reply(res, "demo");
      EXPECT_LT(took, milliseconds(250));
    } else {
      EXPECT_EQ(res.result_int(), 200);
      EXPECT_GE(took, milliseconds(300));
    }
  }
  EXPECT_TRUE(dropped) << "20 requests passed with p near 0.9";
}

TEST_F(BreakerTest, ClosesWithinAboutOneWindowOnceTheBackendHeals) {
  SluiceProcess gateway(breaker_config(failing_.endpoint(), healthy_.endpoint()));
  HttpClient client(gateway.proxy_port());
  ASSERT_GE(send_counting_drops(client, "/status/500", 200, 500), 1);

  // The same backend now answers: only the requests that still pass refill the window, so keep
  // sending while watching the gauge. Deadline: three 2 s windows.
  const Labels demo{{"backend", "demo"}};
  ASSERT_GT(metric_value(gateway, "sluice_breaker_drop_probability", demo), 0);
  const auto healed = Clock::now();
  const auto deadline = healed + milliseconds(6000);
  bool closed = false;
  while (!closed && Clock::now() < deadline) {
    send_counting_drops(client, "/ok", 5, 200);
    closed = metric_value(gateway, "sluice_breaker_drop_probability", demo) == 0;
  }
  ASSERT_TRUE(closed) << "drop probability still above 0 6 s after the backend healed";
  // Only accepts are added from now on, and failures leave the window before them: p stays 0.
  EXPECT_EQ(send_counting_drops(client, "/ok", 20, 200), 0);
}

TEST_F(BreakerTest, DisabledBreakerNeverDropsButStillCountsFailures) {
  SluiceProcess gateway(breaker_config(failing_.endpoint(), healthy_.endpoint(), false));
  HttpClient client(gateway.proxy_port());
  EXPECT_EQ(send_counting_drops(client, "/status/500", 200, 500), 0);
  const Labels failure{{"backend", "demo"}, {"outcome", "failure"}};
  const Scrape s = scrape_until(gateway, "200 failures counted", [&](const Scrape& t) {
    return t.value("sluice_upstream_requests_total", failure) >= 200;
  });
  // outcome="failure" is about failure_statuses, whether or not the breaker is enabled.
  EXPECT_EQ(s.value("sluice_upstream_requests_total", failure), 200) << s.text();
  EXPECT_EQ(s.value("sluice_breaker_drops_total", {{"backend", "demo"}}), 0);
}

TEST_F(BreakerTest, ConnectErrorsCountAsFailures) {
  RawPeer refused(RawPeer::Mode::kRefuse);
  json config = breaker_config(refused.endpoint(), healthy_.endpoint());
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  int drops = 0;
  for (int i = 0; i < 100; ++i) {
    const Response res = client.get("/ok");
    if (is_drop(res)) {
      ++drops;
    } else {
      ASSERT_EQ(res.result_int(), 502) << res.body();
      EXPECT_EQ(error_code(res), "upstream_connect_error");
    }
  }
  EXPECT_GE(drops, 1);
}

TEST_F(BreakerTest, TheAccessLogShowsPassDroppedAndOff) {
  json config = breaker_config(failing_.endpoint(), healthy_.endpoint());
  config["backends"]["healthy"]["breaker"] = breaker_params(false);
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  std::string passed_id;
  std::string dropped_id;
  for (int i = 0; i < 300 && (passed_id.empty() || dropped_id.empty()); ++i) {
    const std::string id = "brk-" + std::to_string(i);
    const Response res = client.get("/status/500", {{"X-Request-Id", id}});
    if (is_drop(res)) {
      dropped_id = dropped_id.empty() ? id : dropped_id;
    } else {
      passed_id = passed_id.empty() ? id : passed_id;
    }
  }
  ASSERT_FALSE(dropped_id.empty());
  ASSERT_FALSE(passed_id.empty());
  ASSERT_EQ(client.get("/healthy/ok", {{"X-Request-Id", "brk-off"}}).result_int(), 200);

  const auto entry = [&](const std::string& id) {
    std::string line;
    if (!gateway.process().wait_for_line(R"("request_id":")" + id + "\"", kDefaultTimeout, &line)) {
      ADD_FAILURE() << "no access log line for " << id;
      return json::object();
    }
    return json::parse(line);
  };
  const json dropped = entry(dropped_id);
  EXPECT_EQ(dropped["breaker"], "dropped");
  EXPECT_EQ(dropped["status"], 503);
  EXPECT_EQ(dropped["backend"], "demo");
  const json passed = entry(passed_id);
  EXPECT_EQ(passed["breaker"], "pass");
  EXPECT_EQ(passed["status"], 500);
  const json off = entry("brk-off");
  EXPECT_EQ(off["breaker"], "off");
  EXPECT_EQ(off["status"], 200);
}

}  // namespace
}  // namespace sluice::testing
