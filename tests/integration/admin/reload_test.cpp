// SPDX-License-Identifier: Apache-2.0
// SIGHUP re-reads every reloadable part of the file: limits, overrides, backends, breakers,
// routes and timeouts; an invalid file keeps the old config and says why.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/integration/admin/admin_fixture.hpp"
#include "tests/support/metrics_text.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

class ReloadTest : public AdminFixture {
 protected:
  static double reloads(const SluiceProcess& gateway, const char* result) {
    return metric_value(gateway, "sluice_config_reloads_total", {{"result", result}});
  }
  static void reload_and_wait(SluiceProcess& gateway, std::string_view line) {
    const std::size_t mark = gateway.process().line_count();
    gateway.reload();
    ASSERT_TRUE(gateway.process().wait_for_line_after(mark, line)) << gateway.process().output();
  }
};

TEST_F(ReloadTest, AValidFileSwapsEveryReloadablePartAndKeepsTheCounts) {
  DemoBackend other;
  auto gateway = start();
  auto client = admin(*gateway);
  HttpClient proxy(gateway->proxy_port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(status_for(proxy, "alice"), 200U);
  }
  json next = config;
  next["limits"]["p"]["requests"] = 4;
  next["overrides"] = {{"p", {{"vip", {{"requests", 1}}}}}};
  next["backends"]["demo"]["endpoints"] = {other.endpoint()};
  next["backends"]["demo"]["timeout_ms"] = 100;
  next["backends"]["demo"]["breaker"] = {{"k", 3}};
  next["http"] = {{"idle_timeout_ms", 30000}};
  next["routes"][0]["prefix"] = "/api";
  next["routes"][0]["strip_prefix"] = true;
  gateway->rewrite_config(next);
  reload_and_wait(*gateway, "reload ok");

  const json effective = client.get("/admin/config").body;
  EXPECT_EQ(effective["limits"]["p"]["requests"], 4);
  EXPECT_EQ(effective["overrides"]["p"]["vip"]["requests"], 1);
  EXPECT_EQ(effective["backends"]["demo"]["endpoints"], json::array({other.endpoint()}));
  EXPECT_EQ(effective["backends"]["demo"]["timeout_ms"], 100);
  EXPECT_EQ(effective["backends"]["demo"]["breaker"]["k"], 3.0);
  EXPECT_EQ(effective["http"]["idle_timeout_ms"], 30000);
  EXPECT_EQ(reloads(*gateway, "ok"), 1);
  // Behaviour: the new route, endpoint, timeout, limit (with alice's 3 still counted), override.
  const Response first = proxy.get("/api/ok", {{"X-API-Key", "alice"}});
  EXPECT_EQ(first.result_int(), 200);
  EXPECT_EQ(first["X-Backend-Port"], std::to_string(other.port()));
  EXPECT_EQ(status_for(proxy, "alice", "/api/ok"), 429U);
  EXPECT_EQ(status_for(proxy, "vip", "/api/ok"), 200U);
  EXPECT_EQ(status_for(proxy, "vip", "/api/ok"), 429U);
  EXPECT_EQ(proxy.get("/api/slow/1000", {{"X-API-Key", "bob"}}).result_int(), 504);
}

/// Whether any series of the scrape carries label `name` = `value`.
bool any_series_with(const Scrape& scrape, std::string_view name, std::string_view value) {
  for (const auto& series : scrape.series()) {
    for (const auto& [label, v] : series.labels) {
      if (label == name && v == value) {
        return true;
      }
    }
  }
  return false;
}

TEST_F(ReloadTest, RemovedRoutesBackendsAndPoliciesTakeTheirMetricSeriesWithThem) {
  DemoBackend other;
  config["backends"]["old"] = {{"endpoints", {other.endpoint()}}};
  config["limits"]["old_policy"] = {{"requests", 100}, {"window_ms", 60000}};
  config["routes"] = json::array({{{"name", "old_route"},
                                   {"prefix", "/old"},
                                   {"strip_prefix", true},
                                   {"backend", "old"},
                                   {"limit", "old_policy"}},
                                  config["routes"][0]});
  auto gateway = start();
  HttpClient proxy(gateway->proxy_port());
  ASSERT_EQ(proxy.get("/old/ok", {{"X-API-Key", "alice"}}).result_int(), 200);
  ASSERT_EQ(status_for(proxy, "alice"), 200U);
  const Scrape before = scrape_until(*gateway, "the old route's request", [](const Scrape& s) {
    return s.find("sluice_requests_total",
                  {{"backend", "old"}, {"code", "200"}, {"route", "old_route"}}) == 1.0;
  });
  ASSERT_TRUE(any_series_with(before, "backend", "old"));
  ASSERT_TRUE(any_series_with(before, "policy", "old_policy"));

  json next = config;
  next["backends"].erase("old");
  next["limits"].erase("old_policy");
  next["routes"].erase(0);
  gateway->rewrite_config(next);
  reload_and_wait(*gateway, "reload ok");
  ASSERT_EQ(status_for(proxy, "alice"), 200U);  // the remaining route still counts
  // The series go once no worker holds the old config any more (requests still in flight on
  // it may record into them), which the gateway checks every second.
  const Scrape after =
      scrape_until(*gateway, "the removed names' series to go",
                   [](const Scrape& s) { return !any_series_with(s, "route", "old_route"); });
  EXPECT_FALSE(any_series_with(after, "route", "old_route")) << after.text();
  EXPECT_FALSE(any_series_with(after, "backend", "old")) << after.text();
  EXPECT_FALSE(any_series_with(after, "policy", "old_policy")) << after.text();
  EXPECT_GE(after.value("sluice_requests_total",
                        {{"backend", "demo"}, {"code", "200"}, {"route", "all"}}),
            2.0);
}

TEST_F(ReloadTest, AnInvalidFileKeepsTheOldConfigLogsEveryProblemAndCountsAnError) {
  auto gateway = start();
  auto client = admin(*gateway);
  const json before = client.get("/admin/config").body;
  json broken = config;
  broken["limits"]["p"]["requests"] = -1;
  broken["routes"][0]["backend"] = "nope";
  gateway->rewrite_config(broken);
  reload_and_wait(*gateway, "reload failed");
  EXPECT_TRUE(gateway->process().wait_for_line(
      "reload problem limits.p.requests: must be between 1 and 4294967295"));
  EXPECT_TRUE(
      gateway->process().wait_for_line("reload problem routes[0].backend: no such backend"));
  EXPECT_EQ(client.get("/admin/config").body, before);
  EXPECT_EQ(reloads(*gateway, "error"), 1);
  EXPECT_EQ(reloads(*gateway, "ok"), 0);
  HttpClient proxy(gateway->proxy_port());
  EXPECT_EQ(status_for(proxy, "alice"), 200U);
}

TEST_F(ReloadTest, TheFileIsTheTruthAfterAReloadWhenChangesWereNotPersisted) {
  auto gateway = start();
  auto client = admin(*gateway);
  ASSERT_EQ(client.put("/admin/limits/p", {{"requests", 1}, {"window_ms", 60000}}).status, 200U);
  reload_and_wait(*gateway, "reload ok");
  EXPECT_EQ(client.get("/admin/limits/p").body["requests"], 5);
}

// config_watch: the file's change is the signal (docs/behaviour.md, "Watching the config file").
TEST_F(ReloadTest, WithConfigWatchAChangedFileReloadsWithoutASignalAndABadOneKeepsTheOld) {
  config["config_watch"] = true;
  auto gateway = start();
  ASSERT_TRUE(gateway->process().wait_for_line("watching config file"))
      << gateway->process().output();
  auto client = admin(*gateway);
  json next = config;
  next["limits"]["p"]["requests"] = 4;
  std::size_t mark = gateway->process().line_count();
  gateway->rewrite_config(next);
  ASSERT_TRUE(gateway->process().wait_for_line_after(mark, "reload ok"))
      << gateway->process().output();
  EXPECT_EQ(client.get("/admin/limits/p").body["requests"], 4);
  EXPECT_EQ(reloads(*gateway, "ok"), 1);

  json broken = next;
  broken["limits"]["p"]["requests"] = -1;
  mark = gateway->process().line_count();
  gateway->rewrite_config(broken);
  ASSERT_TRUE(gateway->process().wait_for_line_after(mark, "reload failed"))
      << gateway->process().output();
  EXPECT_EQ(client.get("/admin/limits/p").body["requests"], 4);
  EXPECT_EQ(reloads(*gateway, "error"), 1);
}

// A Kubernetes ConfigMap volume swaps a `..data` symlink; the file's own name never changes.
TEST_F(ReloadTest, WithConfigWatchAConfigMapStyleSymlinkSwapReloads) {
  namespace fs = std::filesystem;
  config["config_watch"] = true;
  auto gateway = start();
  ASSERT_TRUE(gateway->process().wait_for_line("watching config file"));
  auto client = admin(*gateway);
  const fs::path file = gateway->config_path();
  const fs::path mount = file.parent_path();
  const auto write_version = [&](const std::string& name, const json& body) {
    fs::create_directory(mount / name);
    std::ofstream(mount / name / file.filename()) << body.dump();
  };
  // The file becomes ..data/sluice.json (the same bytes: no reload), as a ConfigMap mounts it.
  write_version("..v1", config);
  fs::create_directory_symlink("..v1", mount / "..data");
  fs::create_symlink(fs::path("..data") / file.filename(), mount / "link.tmp");
  fs::rename(mount / "link.tmp", file);
  json next = config;
  next["limits"]["p"]["requests"] = 7;
  write_version("..v2", next);
  const std::size_t mark = gateway->process().line_count();
  fs::create_directory_symlink("..v2", mount / "..data_tmp");
  fs::rename(mount / "..data_tmp", mount / "..data");
  fs::remove_all(mount / "..v1");
  ASSERT_TRUE(gateway->process().wait_for_line_after(mark, "reload ok"))
      << gateway->process().output();
  EXPECT_EQ(client.get("/admin/limits/p").body["requests"], 7);
  EXPECT_EQ(reloads(*gateway, "ok"), 1);
}

// admin.persist writes the file itself: that write is what runs, not a change to reload.
TEST_F(ReloadTest, WithConfigWatchAPersistedAdminChangeIsNotReloadedAgain) {
  config["config_watch"] = true;
  config["admin"]["persist"] = true;
  auto gateway = start();
  ASSERT_TRUE(gateway->process().wait_for_line("watching config file"));
  auto client = admin(*gateway);
  ASSERT_EQ(client.put("/admin/limits/p", {{"requests", 2}, {"window_ms", 30000}}).status, 200U);
  // Several debounce periods: a reload of our own write would have happened by now.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  json edited = gateway->read_config();
  edited["limits"]["p"]["requests"] = 3;
  const std::size_t mark = gateway->process().line_count();
  gateway->rewrite_config(edited);
  ASSERT_TRUE(gateway->process().wait_for_line_after(mark, "reload ok"));
  EXPECT_EQ(reloads(*gateway, "ok"), 1);  // the hand edit only
  EXPECT_EQ(client.get("/admin/limits/p").body["requests"], 3);
  EXPECT_EQ(client.get("/admin/limits/p").body["window_ms"], 30000);
}

}  // namespace
}  // namespace sluice::testing
