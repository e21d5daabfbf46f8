// SPDX-License-Identifier: Apache-2.0
// The admin listener's GET /metrics through the real binary (docs/behaviour.md "Metrics"):
// upstream outcomes by kind, the connection gauges, reloads by result, and a real scrape that
// `promtool check metrics` accepts. Every family and exact counts: metrics_test.cpp.
#include "tests/integration/proxy/metrics_fixture.hpp"

namespace sluice::testing {
namespace {

using namespace metrics_support;  // NOLINT(google-build-using-namespace)

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
    s = scrape_until(gateway, "no active upstream connection", [&](const Scrape& t) {
      return upstream(t, "active") == 0 && upstream(t, "idle") >= 1;
    });
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
    s = scrape_until(
        gateway, "the slow request's connection back in the pool",
        [&](const Scrape& t) { return upstream(t, "active") == 0 && upstream(t, "idle") >= 1; });
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
