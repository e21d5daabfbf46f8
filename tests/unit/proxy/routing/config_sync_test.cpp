// SPDX-License-Identifier: Apache-2.0
// One sync step per config version: bindings for the new one, and the retirement of what it
// lost, metric series included, once no snapshot uses them any more.
#include "gateway/proxy/routing/config_sync.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gateway/config/config_loader.hpp"
#include "gateway/store/memory_store.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/scripted_random.hpp"

namespace sluice::proxy {
namespace {

using nlohmann::json;

std::shared_ptr<const config::Config> config_of(const json& document) {
  auto loaded = config::parse_config(document);
  EXPECT_TRUE(loaded.ok());
  return std::make_shared<const config::Config>(std::move(*loaded.config));
}

json version(bool with_extra) {
  json c = {
      {"limits", {{"keep", {{"requests", 5}, {"window_ms", 1000}}}}},
      {"backends", {{"b", {{"endpoints", {"10.0.0.1:80"}}}}}},
      {"routes",
       json::array({{{"name", "r"}, {"prefix", "/"}, {"backend", "b"}, {"limit", "keep"}}})},
  };
  if (with_extra) {
    c["limits"]["gone"] = {{"requests", 5}, {"window_ms", 1000}};
    c["backends"]["old"] = {{"endpoints", {"10.0.0.2:80"}}};
    c["routes"].push_back(
        {{"name", "extra"}, {"prefix", "/x"}, {"backend", "old"}, {"limit", "gone"}});
  }
  return c;
}

class ConfigSyncTest : public ::testing::Test {
 protected:
  /// True when the scrape holds a series whose text contains `needle`.
  bool exported(std::string_view needle) {
    return metrics_.scrape().find(needle) != std::string::npos;
  }

  /// Installs `document` as Gateway::install() does: applies it, swaps the snapshot in and
  /// retires the previous version. Returns the new snapshot; the fixture keeps only the
  /// current one, so a test holds an older snapshot alive by keeping what this returned.
  std::shared_ptr<const Snapshot> install(const json& document) {
    const auto next = config_of(document);
    auto snapshot = std::make_shared<const Snapshot>(next, sync_.apply(*next));
    if (current_) {
      sync_.retire(current_->config(), next, *current_);
    }
    current_ = snapshot;
    return snapshot;
  }

  std::shared_ptr<const Snapshot> current_;

  testing::ManualClock clock_;
  testing::ScriptedRandom random_;
  store::MemoryStore store_{clock_, store::MemoryStore::Options{}};
  breaker::BreakerRegistry breakers_{clock_, random_};
  metrics::Metrics metrics_{"test"};
  health::HealthRegistry health_;
  ConfigSync sync_{store_, breakers_, health_, metrics_};
};

TEST_F(ConfigSyncTest, BindsEveryPolicyBackendAndRoute) {
  const auto config = config_of(version(true));
  const Bindings b = sync_.apply(*config);
  EXPECT_EQ(b.policies.size(), 2U);
  EXPECT_TRUE(store_.find("gone"));
  EXPECT_EQ(b.breakers.size(), 2U);
  EXPECT_NE(breakers_.find("old"), nullptr);
  EXPECT_EQ(b.route_metrics.size(), 2U);
  EXPECT_NE(b.unrouted, nullptr);
  const Snapshot snapshot(config, b);  // a snapshot is built from them, touching nothing else
  EXPECT_EQ(snapshot.backend_count(), 2U);
}

TEST_F(ConfigSyncTest, RetiresWhatTheNewVersionLostOnceNoSnapshotUsesIt) {
  auto old_snapshot = install(version(true));
  // A request counted on the route that will go, so its series exists.
  old_snapshot->router().routes()[1].metrics->record(200, 0.001);
  ASSERT_TRUE(exported(R"(route="extra")"));
  ASSERT_TRUE(exported(R"(backend="old")"));
  ASSERT_TRUE(exported(R"(policy="gone")"));

  install(version(false));
  EXPECT_FALSE(store_.find("gone"));          // at once: decisions on the old id admit
  EXPECT_EQ(breakers_.find("old"), nullptr);  // forgotten (the old snapshot keeps it alive)
  EXPECT_EQ(sync_.collect(), 0U);             // the old snapshot is still in use
  EXPECT_TRUE(exported(R"(route="extra")"));
  old_snapshot.reset();
  EXPECT_EQ(sync_.collect(), 3U);  // the route, the backend, the policy
  EXPECT_FALSE(exported(R"(route="extra")"));
  EXPECT_FALSE(exported(R"(backend="old")"));
  EXPECT_FALSE(exported(R"(policy="gone")"));
  EXPECT_TRUE(exported(R"(route="r")"));
  EXPECT_TRUE(exported(R"(policy="keep")"));
  EXPECT_EQ(sync_.pending(), 0U);
}

TEST_F(ConfigSyncTest, ANameThatCameBackKeepsItsSeries) {
  install(version(true));
  install(version(false));
  const auto third = install(version(true));  // the first two are gone at once
  sync_.collect();
  EXPECT_TRUE(exported(R"(backend="old")"));  // the current version has it again
  EXPECT_TRUE(store_.find("gone"));
  third->router().routes()[1].metrics->record(201, 0.001);  // its handles are still live
  EXPECT_TRUE(exported(R"(code="201",route="extra")"));
}

TEST_F(ConfigSyncTest, ASeriesStaysWhileALaterSnapshotThatHadItAgainLives) {
  // with -> without -> with -> without: the first and the third snapshot share the series.
  auto first = install(version(true));
  install(version(false));
  auto third = install(version(true));
  install(version(false));
  first.reset();
  EXPECT_EQ(sync_.collect(), 0U);  // a request still on the third snapshot records into it
  third->router().routes()[1].metrics->record(201, 0.001);
  EXPECT_TRUE(exported(R"(code="201",route="extra")"));
  third.reset();
  EXPECT_EQ(sync_.collect(), 3U);
  EXPECT_FALSE(exported(R"(route="extra")"));
  EXPECT_EQ(sync_.pending(), 0U);
}

TEST_F(ConfigSyncTest, AnOlderSnapshotStillInUseHoldsTheSeriesToo) {
  // with -> with (a tuning change) -> without, while a request still runs on the first.
  auto first = install(version(true));
  json tuned = version(true);
  tuned["limits"]["keep"]["requests"] = 6;
  install(tuned);
  install(version(false));
  EXPECT_EQ(sync_.collect(), 0U);  // the first snapshot points at the same series
  first->router().routes()[1].metrics->record(202, 0.001);
  EXPECT_TRUE(exported(R"(code="202",route="extra")"));
  first.reset();
  EXPECT_EQ(sync_.collect(), 3U);
  EXPECT_FALSE(exported(R"(route="extra")"));
}

}  // namespace
}  // namespace sluice::proxy
