// SPDX-License-Identifier: Apache-2.0
// The admin listener's GET /metrics through the real binary (docs/behaviour.md "Admin API" and
// "Metrics"): every family with its type and labels, counters that move by exactly what a known
// sequence of requests does, the connection and reload series, and a real scrape that `promtool
// check metrics` accepts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/raw_peer.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

/// The gateway's version, as `sluice --version` prints it ("sluice X" -> "X").
std::string gateway_version() {
  const ProcessResult r = run_process({SLUICE_BINARY, "--version"});
  std::string out = r.out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) {
    out.pop_back();
  }
  return out.starts_with("sluice ") ? out.substr(7) : out;
}

/// minimal_gateway_config with identity by X-API-Key (else the client IP), policy "p" of
/// `limit` per minute, a 60 s breaker window (nothing leaves it during a test), and one route
/// "api" (prefix /api, stripped, limited by "p"): anything else has no route.
json metrics_config(const std::string& endpoint, int limit) {
  json c = minimal_gateway_config({endpoint});
  c["identity"] = json::array({json{{"header", "X-API-Key"}}, json{{"client_ip", true}}});
  c["limits"] = {{"p", {{"requests", limit}, {"window_ms", 60000}, {"buckets", 60}}}};
  c["backends"]["demo"]["breaker"] = {{"enabled", true}, {"window_ms", 60000}, {"buckets", 60}};
  c["routes"] = json::array({{{"name", "api"},
                              {"prefix", "/api"},
                              {"backend", "demo"},
                              {"strip_prefix", true},
                              {"limit", "p"}}});
  return c;
}

class MetricsTest : public ::testing::Test, protected ProxyFixtureBase {};

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

TEST_F(MetricsTest, UpstreamOutcomesAreCountedByKind) {
  RawPeer refused(RawPeer::Mode::kRefuse);
  RawPeer resetting(RawPeer::Mode::kResetAfterRequest);
  RawPeer silent(RawPeer::Mode::kNeverAnswer);
  config["backends"]["refused"] = {{"endpoints", {refused.endpoint()}}};
  config["backends"]["resetting"] = {{"endpoints", {resetting.endpoint()}}};
  config["backends"]["silent"] = {{"endpoints", {silent.endpoint()}}, {"timeout_ms", 200}};
  config["routes"] = json::array({
      {{"name", "refused"}, {"prefix", "/refused"}, {"backend", "refused"}},
      {{"name", "resetting"}, {"prefix", "/resetting"}, {"backend", "resetting"}},
      {{"name", "silent"}, {"prefix", "/silent"}, {"backend", "silent"}},
  });
  SluiceProcess gateway(config);
  HttpClient client(gateway.proxy_port());
  EXPECT_EQ(client.get("/refused").result_int(), 502);
  EXPECT_EQ(client.get("/resetting").result_int(), 502);
  EXPECT_EQ(client.get("/silent").result_int(), 504);
  const auto count = [](const Scrape& s, const char* name, const char* outcome) {
    return s.value("sluice_upstream_requests_total", {{"backend", name}, {"outcome", outcome}});
  };
  // The outcome is counted, the 50x sent and the breaker's window fed at nearby but distinct
  // moments on the worker thread: wait for both (a scrape between them failed under ASan).
  const Scrape s =
      scrape_until(gateway, "3 upstream outcomes and 3 window entries", [&](const Scrape& t) {
        return t.sum("sluice_upstream_requests_total") >= 3 &&
               t.sum("sluice_breaker_window_requests") >= 3;
      });
  EXPECT_EQ(count(s, "refused", "connect_error"), 1);
  EXPECT_EQ(count(s, "resetting", "reset"), 1);
  EXPECT_EQ(count(s, "silent", "timeout"), 1);
  EXPECT_EQ(s.sum("sluice_upstream_requests_total"), 3);
  // Each is a failure in its backend's breaker window (none is an accept).
  for (const char* name : {"refused", "resetting", "silent"}) {
    EXPECT_EQ(s.value("sluice_breaker_window_requests", {{"backend", name}}), 1) << name;
    EXPECT_EQ(s.value("sluice_breaker_window_accepts", {{"backend", name}}), 0) << name;
  }
}

TEST_F(MetricsTest, ConnectionGaugesFollowOpenConnections) {
  config["threads"] = 1;
  SluiceProcess gateway(config);
  const auto downstream = [](const Scrape& s) { return s.value("sluice_downstream_connections"); };
  const auto upstream = [](const Scrape& s, const char* state) {
    return s.value("sluice_upstream_connections", {{"backend", "demo"}, {"state", state}});
  };
  // The admin connection is not a downstream (proxy) connection, but compare against a
  // baseline anyway: what is asserted is how the gauge follows the clients.
  const double base = downstream(scrape_metrics(gateway));
  {
    HttpClient a(gateway.proxy_port());
    HttpClient b(gateway.proxy_port());
    HttpClient c(gateway.proxy_port());
    for (HttpClient* client : {&a, &b, &c}) {
      ASSERT_EQ(client->get("/ok").result_int(), 200);
    }
    Scrape s = scrape_until(gateway, "3 downstream connections",
                            [&](const Scrape& t) { return downstream(t) == base + 3; });
    EXPECT_EQ(downstream(s), base + 3);
    // No request in flight: every upstream connection is idle in the pool.
    s = scrape_until(gateway, "no active upstream connection",
                     [&](const Scrape& t) { return upstream(t, "active") == 0; });
    EXPECT_EQ(upstream(s, "active"), 0);
    EXPECT_GE(upstream(s, "idle"), 1);

    // One request in flight upstream: one active connection while it lasts.
    a.send_raw("GET /slow/1500 HTTP/1.1\r\nHost: a\r\n\r\n");
    s = scrape_until(
        gateway, "the slow request's upstream connection to be active",
        [&](const Scrape& t) { return upstream(t, "active") == 1; }, milliseconds(1000));
    EXPECT_EQ(upstream(s, "active"), 1);
    const auto slow = a.read_response();
    ASSERT_TRUE(slow);
    EXPECT_EQ(slow->result_int(), 200);
    s = scrape_until(gateway, "the slow request's connection back in the pool",
                     [&](const Scrape& t) { return upstream(t, "active") == 0; });
    EXPECT_EQ(upstream(s, "active"), 0);
    EXPECT_GE(upstream(s, "idle"), 1);

    b.close();
    c.close();
    s = scrape_until(gateway, "1 downstream connection",
                     [&](const Scrape& t) { return downstream(t) == base + 1; });
    EXPECT_EQ(downstream(s), base + 1);
  }
  const Scrape s = scrape_until(gateway, "no downstream connection",
                                [&](const Scrape& t) { return downstream(t) == base; });
  EXPECT_EQ(downstream(s), base);
}

TEST_F(MetricsTest, ConfigReloadsAreCountedByResult) {
  SluiceProcess gateway(config);
  const auto reloads = [](const Scrape& s, const char* result) {
    return s.value("sluice_config_reloads_total", {{"result", result}});
  };
  const Scrape before = scrape_metrics(gateway);

  std::size_t mark = gateway.process().line_count();
  gateway.rewrite_config(config);
  gateway.reload();
  ASSERT_TRUE(gateway.process().wait_for_line_after(mark, "reload ok"))
      << gateway.process().output();
  Scrape s = scrape_until(gateway, "a counted successful reload", [&](const Scrape& t) {
    return reloads(t, "ok") >= reloads(before, "ok") + 1;
  });
  EXPECT_EQ(reloads(s, "ok"), reloads(before, "ok") + 1);
  EXPECT_EQ(reloads(s, "error"), reloads(before, "error"));

  json broken = config;
  broken["routes"][0]["backend"] = "missing";
  mark = gateway.process().line_count();
  gateway.rewrite_config(broken);
  gateway.reload();
  ASSERT_TRUE(gateway.process().wait_for_line_after(mark, "reload failed"))
      << gateway.process().output();
  s = scrape_until(gateway, "a counted failed reload", [&](const Scrape& t) {
    return reloads(t, "error") >= reloads(before, "error") + 1;
  });
  EXPECT_EQ(reloads(s, "error"), reloads(before, "error") + 1);
  EXPECT_EQ(reloads(s, "ok"), reloads(before, "ok") + 1);
}

TEST_F(MetricsTest, PromtoolAcceptsARealScrape) {
  const std::filesystem::path promtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(promtool)) {
    GTEST_SKIP() << "promtool is not installed (Debian package `prometheus`, a test dependency "
                    "per docs/behaviour.md, \"Build and layout\"): the metrics lint did not "
                    "run";
  }
  json c = metrics_config(backend.endpoint(), 2);
  c["limits"]["quiet"] = {
      {"requests", 1}, {"window_ms", 60000}, {"buckets", 60}, {"mode", "shadow"}};
  c["routes"].push_back({{"name", "quiet"},
                         {"prefix", "/quiet"},
                         {"backend", "demo"},
                         {"strip_prefix", true},
                         {"limit", "quiet"}});
  SluiceProcess gateway(c);
  HttpClient client(gateway.proxy_port());
  HttpClient admin(gateway.admin_port());
  // Something in every family: successes, failures, limited, shadow-limited, no route.
  for (const char* target : {"/api/ok", "/api/status/500", "/api/ok", "/nowhere", "/quiet/ok",
                             "/quiet/ok", "/api/slow/5"}) {
    client.get(target);
  }
  const Response res = admin.get("/metrics");
  ASSERT_EQ(res.result_int(), 200);
  ASSERT_NO_THROW(Scrape{res.body()});

  std::string path = (std::filesystem::temp_directory_path() / "sluice-metrics-XXXXXX").string();
  const int fd = ::mkstemp(path.data());
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    std::ofstream out(path, std::ios::trunc);
    out << res.body();
  }
  ChildProcess check({"/bin/sh", "-c", "exec /usr/bin/promtool check metrics < \"$0\"", path});
  const auto code = check.wait_exit(std::chrono::seconds(30));
  std::filesystem::remove(path);
  ASSERT_TRUE(code.has_value()) << "promtool did not finish within 30 s";
  EXPECT_EQ(*code, 0) << check.output() << "\n--- scrape ---\n" << res.body();
  EXPECT_EQ(check.output(), "") << "lint findings";
}

}  // namespace
}  // namespace sluice::testing
