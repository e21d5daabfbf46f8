// SPDX-License-Identifier: Apache-2.0
// The admin listener's GET /metrics through the real binary (docs/behaviour.md "Admin API" and
// "Metrics"): every family with its type and labels, and counters that move by exactly what a
// known sequence of requests does. Outcomes, connections, reloads and promtool:
// metrics_series_test.cpp.
#include "tests/integration/proxy/metrics_fixture.hpp"

namespace sluice::testing {
namespace {

using namespace metrics_support;  // NOLINT(google-build-using-namespace)

TEST_F(MetricsTest, ServesEveryFamilyWithItsTypeAsPrometheusText) {
  const json c = metrics_config(backend.endpoint(), 10);
  SluiceProcess gateway(c);
  HttpClient client(gateway.proxy_port());
  ASSERT_EQ(client.get("/api/ok").result_int(), 200);
  // A reload too, so that every family has had a reason to show a sample.
  const std::size_t mark = gateway.process().line_count();
  gateway.rewrite_config(c);
  gateway.reload();
  ASSERT_TRUE(gateway.process().wait_for_line_after(mark, "reload ok"));
  HttpClient admin(gateway.admin_port());
  // The request's series appear just after its response went out: wait for them.
  (void)scrape_until(gateway, "the series of the request to /api/ok", [](const Scrape& t) {
    return t.sum("sluice_requests_total", {{"route", "api"}}) >= 1;
  });
  const Response res = admin.get("/metrics");
  ASSERT_EQ(res.result_int(), 200);
  EXPECT_TRUE(std::string(res[http::field::content_type]).starts_with("text/plain; version=0.0.4"))
      << res[http::field::content_type];
  const Scrape s(res.body());
  const std::map<std::string, std::string> families = {
      {"sluice_requests_total", "counter"},
      {"sluice_request_duration_seconds", "histogram"},
      {"sluice_upstream_requests_total", "counter"},
      {"sluice_upstream_duration_seconds", "histogram"},
      {"sluice_ratelimit_requests_total", "counter"},
      {"sluice_ratelimit_tracked_keys", "gauge"},
      {"sluice_breaker_drops_total", "counter"},
      {"sluice_breaker_shadow_drops_total", "counter"},
      {"sluice_breaker_slow_calls_total", "counter"},
      {"sluice_breaker_drop_probability", "gauge"},
      {"sluice_breaker_window_requests", "gauge"},
      {"sluice_breaker_window_accepts", "gauge"},
      {"sluice_downstream_connections", "gauge"},
      {"sluice_tunnels_active", "gauge"},
      {"sluice_upstream_connections", "gauge"},
      {"sluice_config_reloads_total", "counter"},
      {"sluice_access_log_dropped_total", "counter"},
      {"sluice_build_info", "gauge"},
      {"sluice_endpoint_healthy", "gauge"},
      {"sluice_endpoint_ejections_total", "counter"},
      {"sluice_endpoint_panic_picks_total", "counter"},
      {"sluice_retries_total", "counter"},
      {"sluice_jwks_refreshes_total", "counter"},
  };
  for (const auto& [family, type] : families) {
    EXPECT_EQ(s.type(family), type) << family;
  }
  // Every sample belongs to a family of docs/behaviour.md "Metrics" and carries exactly its labels.
  const std::map<std::string, std::vector<std::string>> labels_of = {
      {"sluice_requests_total", {"backend", "code", "route"}},
      {"sluice_request_duration_seconds_bucket", {"le", "route"}},
      {"sluice_request_duration_seconds_sum", {"route"}},
      {"sluice_request_duration_seconds_count", {"route"}},
      {"sluice_upstream_requests_total", {"backend", "outcome"}},
      {"sluice_upstream_duration_seconds_bucket", {"backend", "le"}},
      {"sluice_upstream_duration_seconds_sum", {"backend"}},
      {"sluice_upstream_duration_seconds_count", {"backend"}},
      {"sluice_ratelimit_requests_total", {"policy", "result"}},
      {"sluice_ratelimit_tracked_keys", {"policy"}},
      {"sluice_breaker_drops_total", {"backend"}},
      {"sluice_breaker_shadow_drops_total", {"backend"}},
      {"sluice_breaker_slow_calls_total", {"backend"}},
      {"sluice_backend_concurrency_limit", {"backend"}},
      {"sluice_backend_inflight", {"backend"}},
      {"sluice_concurrency_rejections_total", {"backend"}},
      {"sluice_breaker_drop_probability", {"backend"}},
      {"sluice_breaker_window_requests", {"backend"}},
      {"sluice_breaker_window_accepts", {"backend"}},
      {"sluice_downstream_connections", {}},
      {"sluice_tunnels_active", {}},
      {"sluice_upstream_connections", {"backend", "state"}},
      {"sluice_store_operations_total", {"result", "store"}},
      {"sluice_store_fallback_active", {"store"}},
      {"sluice_config_reloads_total", {"result"}},
      {"sluice_admin_changes_total", {"resource"}},
      {"sluice_access_log_dropped_total", {}},
      {"sluice_build_info", {"version"}},
      {"sluice_endpoint_healthy", {"backend", "endpoint"}},
      {"sluice_endpoint_ejections_total", {"backend", "endpoint"}},
      {"sluice_endpoint_panic_picks_total", {"backend"}},
      {"sluice_retries_total", {"backend", "result"}},
      {"sluice_auth_total", {"method", "result", "route"}},
      {"sluice_jwks_refreshes_total", {"result"}},
  };
  for (const Scrape::Series& series : s.series()) {
    if (!series.name.starts_with("sluice_")) {
      continue;  // a library's own families, if any, are not ours to check
    }
    const auto it = labels_of.find(series.name);
    ASSERT_NE(it, labels_of.end()) << "unexpected series " << series.name;
    std::vector<std::string> names;
    for (const auto& label : series.labels) {
      names.push_back(label.first);
    }
    EXPECT_EQ(names, it->second) << series_key(series.name, series.labels);
    for (const auto& [label, value] : series.labels) {
      if (label == "outcome") {
        EXPECT_TRUE(value == "success" || value == "failure" || value == "timeout" ||
                    value == "connect_error" || value == "reset")
            << value;
      } else if (label == "result" && series.name == "sluice_ratelimit_requests_total") {
        EXPECT_TRUE(value == "allowed" || value == "limited" || value == "shadow_limited") << value;
      } else if (label == "state") {
        EXPECT_TRUE(value == "active" || value == "idle") << value;
      }
    }
  }
  const std::string version = gateway_version();
  ASSERT_FALSE(version.empty());
  EXPECT_EQ(s.find("sluice_build_info", {{"version", version}}), 1.0);
  EXPECT_EQ(s.sum("sluice_build_info"), 1.0);  // one version
  EXPECT_TRUE(s.find("sluice_downstream_connections", {}).has_value());
  for (const char* state : {"active", "idle"}) {
    EXPECT_TRUE(s.find("sluice_upstream_connections", {{"backend", "demo"}, {"state", state}}))
        << state;
  }
  EXPECT_TRUE(s.find("sluice_ratelimit_tracked_keys", {{"policy", "p"}}));
  EXPECT_TRUE(s.find("sluice_breaker_drop_probability", {{"backend", "demo"}}));
}

TEST_F(MetricsTest, AKnownSequenceMovesEverySeriesByExactlyItsCount) {
  SluiceProcess gateway(metrics_config(backend.endpoint(), 4));
  HttpClient client(gateway.proxy_port());
  const Scrape before = scrape_metrics(gateway);
  const Headers alice{{"X-API-Key", "alice"}};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(client.get("/api/ok", alice).result_int(), 200);
  }
  ASSERT_EQ(client.get("/api/status/500", alice).result_int(), 500);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(client.get("/api/ok", alice).result_int(), 429);  // alice's 5th and 6th
  }
  ASSERT_EQ(client.get("/api/ok", {{"X-API-Key", "bob"}}).result_int(), 200);
  ASSERT_EQ(client.get("/nowhere").result_int(), 404);
  // 8 requests: 5 sent upstream (4 successes, 1 failure), 2 limited, 1 without a route.

  const auto total = [](const Scrape& s, const char* name) { return s.sum(name); };
  const Scrape after =
      scrape_until(gateway, "8 requests, 5 of them upstream", [&](const Scrape& s) {
        return total(s, "sluice_requests_total") - total(before, "sluice_requests_total") >= 8 &&
               total(s, "sluice_request_duration_seconds_count") -
                       total(before, "sluice_request_duration_seconds_count") >=
                   8 &&
               total(s, "sluice_upstream_requests_total") -
                       total(before, "sluice_upstream_requests_total") >=
                   5;
      });
  // Every series the assertions name must be in the scrape after the sequence. Before it, a
  // series of sluice_requests_total (labelled by code) or of a route's latency histogram may
  // not exist yet: it appears with its first request, so absent counts as 0 there.
  const auto delta = [&](const char* name, const Labels& labels) {
    return after.value(name, labels) - before.value(name, labels);
  };
  const auto delta_from_absent = [&](const char* name, const Labels& labels) {
    return after.value(name, labels) - before.find(name, labels).value_or(0.0);
  };

  // Requests by route, backend and code. A limited request's backend label is not pinned by
  // the contract (it never reached one): count 429s on route "api" whatever their backend label.
  EXPECT_EQ(delta_from_absent("sluice_requests_total",
                              {{"route", "api"}, {"backend", "demo"}, {"code", "200"}}),
            4);
  EXPECT_EQ(delta_from_absent("sluice_requests_total",
                              {{"route", "api"}, {"backend", "demo"}, {"code", "500"}}),
            1);
  EXPECT_EQ(after.sum("sluice_requests_total", {{"route", "api"}, {"code", "429"}}) -
                before.sum("sluice_requests_total", {{"route", "api"}, {"code", "429"}}),
            2);
  EXPECT_EQ(delta_from_absent("sluice_requests_total",
                              {{"route", "none"}, {"backend", "none"}, {"code", "404"}}),
            1);
  EXPECT_EQ(total(after, "sluice_requests_total") - total(before, "sluice_requests_total"), 8);

  // Latency: one observation per request, on its route.
  EXPECT_EQ(delta_from_absent("sluice_request_duration_seconds_count", {{"route", "api"}}), 7);
  EXPECT_EQ(delta_from_absent("sluice_request_duration_seconds_bucket",
                              {{"route", "api"}, {"le", "+Inf"}}),
            7);
  EXPECT_EQ(delta_from_absent("sluice_request_duration_seconds_count", {{"route", "none"}}), 1);
  EXPECT_GT(delta_from_absent("sluice_request_duration_seconds_sum", {{"route", "api"}}), 0);
  // Cumulative buckets never decrease with `le`.
  std::vector<std::pair<double, double>> buckets;  // (le, count)
  for (const Scrape::Series& series : after.series()) {
    if (series.name == "sluice_request_duration_seconds_bucket" &&
        std::find(series.labels.begin(), series.labels.end(),
                  std::pair<std::string, std::string>("route", "api")) != series.labels.end()) {
      const auto le = std::find_if(series.labels.begin(), series.labels.end(),
                                   [](const auto& l) { return l.first == "le"; });
      ASSERT_NE(le, series.labels.end());
      buckets.emplace_back(std::strtod(le->second.c_str(), nullptr), series.value);
    }
  }
  std::sort(buckets.begin(), buckets.end());
  ASSERT_GE(buckets.size(), 2U);
  for (std::size_t i = 1; i < buckets.size(); ++i) {
    EXPECT_LE(buckets[i - 1].second, buckets[i].second) << "le=" << buckets[i].first;
  }

  // Upstream: only what was sent (429s and 404s never go upstream).
  const auto outcome = [&](const char* o) {
    return delta("sluice_upstream_requests_total", {{"backend", "demo"}, {"outcome", o}});
  };
  EXPECT_EQ(outcome("success"), 4);
  EXPECT_EQ(outcome("failure"), 1);
  EXPECT_EQ(outcome("timeout"), 0);
  EXPECT_EQ(outcome("connect_error"), 0);
  EXPECT_EQ(outcome("reset"), 0);
  EXPECT_EQ(delta("sluice_upstream_duration_seconds_count", {{"backend", "demo"}}), 5);

  // The limiter: 5 admitted (alice 4, bob 1), 2 limited, 2 keys tracked.
  const auto result = [&](const char* r) {
    return delta("sluice_ratelimit_requests_total", {{"policy", "p"}, {"result", r}});
  };
  EXPECT_EQ(result("allowed"), 5);
  EXPECT_EQ(result("limited"), 2);
  EXPECT_EQ(result("shadow_limited"), 0);
  EXPECT_EQ(after.value("sluice_ratelimit_tracked_keys", {{"policy", "p"}}), 2);

  // The breaker's window holds what was sent: 5 requests, 4 accepts; nothing dropped.
  const Labels demo{{"backend", "demo"}};
  EXPECT_EQ(after.value("sluice_breaker_window_requests", demo), 5);
  EXPECT_EQ(after.value("sluice_breaker_window_accepts", demo), 4);
  EXPECT_EQ(after.value("sluice_breaker_drop_probability", demo), 0);
  EXPECT_EQ(delta("sluice_breaker_drops_total", demo), 0);
}

}  // namespace
}  // namespace sluice::testing
