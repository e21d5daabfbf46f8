// SPDX-License-Identifier: Apache-2.0
#include "gateway/metrics/metrics.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/prometheus_text.hpp"

namespace sluice::metrics {
namespace {

using testing::Scrape;

TEST(MetricsTest, ExportsEveryFamilyOfTheSpec) {
  Metrics metrics("1.2.3");
  // prometheus-cpp prints a family once it has a series.
  metrics.route("users", "users-backend").record(200, 0.001);
  metrics.backend("users-backend");
  metrics.policy("standard");
  metrics.store_operation("memory", "ok");
  metrics.store_fallback("memory");
  metrics.count_admin_change("limits");
  const Scrape s(metrics.scrape());  // and it parses: well-formed text format
  for (const char* name :
       {"sluice_requests_total", "sluice_request_duration_seconds",
        "sluice_upstream_requests_total", "sluice_upstream_duration_seconds",
        "sluice_ratelimit_requests_total", "sluice_ratelimit_tracked_keys",
        "sluice_breaker_drops_total", "sluice_breaker_drop_probability",
        "sluice_breaker_window_requests", "sluice_breaker_window_accepts",
        "sluice_downstream_connections", "sluice_upstream_connections",
        "sluice_store_operations_total", "sluice_store_fallback_active",
        "sluice_config_reloads_total", "sluice_admin_changes_total", "sluice_build_info"}) {
    EXPECT_NE(s.type(name), "") << name;
  }
  EXPECT_EQ(s.find("sluice_build_info", {{"version", "1.2.3"}}), 1.0) << s.text();
  EXPECT_EQ(s.find("sluice_config_reloads_total", {{"result", "ok"}}), 0.0) << s.text();
}

TEST(MetricsTest, CountsRequestsByRouteBackendAndCode) {
  Metrics metrics("1");
  RouteMetrics& route = metrics.route("users", "b");
  EXPECT_EQ(&metrics.route("users", "b"), &route);  // created once
  route.record(200, 0.002);
  route.record(200, 0.002);
  route.record(503, 0.0001);
  route.record(0, 1.0);  // never delivered: 499
  const Scrape s(metrics.scrape());
  const auto requests = [&](const char* code) {
    return s.find("sluice_requests_total", {{"route", "users"}, {"backend", "b"}, {"code", code}});
  };
  EXPECT_EQ(requests("200"), 2.0) << s.text();
  EXPECT_EQ(requests("503"), 1.0);
  EXPECT_EQ(requests("499"), 1.0);
  EXPECT_EQ(requests("0"), std::nullopt) << "0 is counted as 499";
  EXPECT_EQ(s.find("sluice_request_duration_seconds_count", {{"route", "users"}}), 4.0);
  EXPECT_EQ(
      s.find("sluice_request_duration_seconds_bucket", {{"route", "users"}, {"le", "0.0025"}}), 3.0)
      << s.text();
}

TEST(MetricsTest, BackendAndPolicyHandlesAreStableAndLabelled) {
  Metrics metrics("1");
  BackendMetrics& b = metrics.backend("users");
  EXPECT_EQ(&metrics.backend("users"), &b);
  b.count(UpstreamOutcome::kConnectError);
  b.connections->active.fetch_add(1);  // mirrored into the gauge at scrape time
  PolicyMetrics& p = metrics.policy("standard");
  p.results[1]->Increment();
  const Scrape s(metrics.scrape());
  const auto upstream = [&](const char* outcome) {
    return s.find("sluice_upstream_requests_total", {{"backend", "users"}, {"outcome", outcome}});
  };
  EXPECT_EQ(upstream("connect_error"), 1.0);
  EXPECT_EQ(upstream("success"), 0.0);
  EXPECT_EQ(s.find("sluice_upstream_connections", {{"backend", "users"}, {"state", "active"}}),
            1.0);
  EXPECT_EQ(
      s.find("sluice_ratelimit_requests_total", {{"policy", "standard"}, {"result", "limited"}}),
      1.0);
}

TEST(MetricsTest, ScrapeHooksRunBeforeEachScrape) {
  Metrics metrics("1");
  int runs = 0;
  metrics.on_scrape([&] {
    ++runs;
    metrics.downstream_connections().Set(runs * 10);
  });
  (void)metrics.scrape();
  const Scrape s(metrics.scrape());
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(s.find("sluice_downstream_connections"), 20.0) << s.text();
}

TEST(MetricsTest, CountsReloadsAndAdminChanges) {
  Metrics metrics("1");
  metrics.count_reload(true);
  metrics.count_reload(false);
  metrics.count_reload(false);
  metrics.count_admin_change("limits");
  const Scrape s(metrics.scrape());
  EXPECT_EQ(s.find("sluice_config_reloads_total", {{"result", "ok"}}), 1.0);
  EXPECT_EQ(s.find("sluice_config_reloads_total", {{"result", "error"}}), 2.0);
  EXPECT_EQ(s.find("sluice_admin_changes_total", {{"resource", "limits"}}), 1.0);
}

}  // namespace
}  // namespace sluice::metrics
