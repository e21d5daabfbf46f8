// SPDX-License-Identifier: Apache-2.0
// Gateway replicas on a real Redis Cluster (three masters started by the harness): sluice finds
// the cluster by itself from one seed address, sends each decision to the master of its slot,
// and follows a live reshard (MOVED and ASK) without losing a count.
#include "tests/support/redis_cluster.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "gateway/store/redis_cluster_map.hpp"
#include "tests/support/demo_backend.hpp"
#include "tests/support/redis_gateway.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

class RedisClusterTest : public ::testing::Test {
 protected:
  RedisCluster cluster{3};
  DemoBackend backend;

  json config(int requests) {
    return redis_gateway_config(backend.endpoint(), cluster.node(0).port(), requests);
  }

  std::set<std::string> window_keys() {
    std::set<std::string> all;
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      for (auto& key : cluster.keys(i, "sluice:{p:*")) {
        all.insert(std::move(key));
      }
    }
    return all;
  }

  /// The window key `user`'s next request creates (the key is a hash: found by difference).
  std::string key_created_by(HttpClient& client, const std::string& user) {
    const auto before = window_keys();
    EXPECT_EQ(status_for(client, user), 200U);
    std::vector<std::string> created;
    for (const auto& key : window_keys()) {
      if (!before.contains(key)) {
        created.push_back(key);
      }
    }
    EXPECT_EQ(created.size(), 1U);
    return created.empty() ? std::string() : created.front();
  }

  std::uint16_t slot_of(const std::string& key) {
    return static_cast<std::uint16_t>(
        std::stoi(cluster.node(0).command({"CLUSTER", "KEYSLOT", key})));
  }

  static double failed_operations(const SluiceProcess& gateway) {
    const Scrape s = scrape_metrics(gateway);
    return s.value("sluice_store_operations_total", {{"store", "redis"}, {"result", "error"}}) +
           s.value("sluice_store_operations_total", {{"store", "redis"}, {"result", "timeout"}});
  }
};

// The harness' own footing: a node's cluster bus is on a port the harness found free, not on
// Redis' default of port + 10000, which nobody checked and another test's connection could hold
// (a CI run failed that way, "bind: Address already in use" on the bus).
TEST_F(RedisClusterTest, EachNodesBusIsOnAPortTheHarnessFoundFree) {
  std::set<std::uint16_t> ports;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    const auto& node = cluster.node(i);
    ASSERT_NE(node.cluster_bus_port(), 0U);
    EXPECT_EQ(node.command({"CONFIG", "GET", "cluster-port"}),
              "cluster-port," + std::to_string(node.cluster_bus_port()));
    ports.insert(node.port());
    ports.insert(node.cluster_bus_port());
  }
  EXPECT_EQ(ports.size(), 2 * cluster.size());
}

TEST_F(RedisClusterTest, SlotsAreTheOnesRedisComputes) {
  for (const std::string key :
       {"a", "sluice:{p:0123456789abcdef}", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap",
        "x{y", "sluice:replicas", "sluice:hash-key"}) {
    EXPECT_EQ(std::to_string(store::cluster_slot(key)),
              cluster.node(0).command({"CLUSTER", "KEYSLOT", key}))
        << key;
  }
  for (int i = 0; i < 300; ++i) {
    const std::string key = "sluice:{p:" + std::to_string(i * 7919) + "}";
    ASSERT_EQ(std::to_string(store::cluster_slot(key)),
              cluster.node(0).command({"CLUSTER", "KEYSLOT", key}))
        << key;
  }
}

TEST_F(RedisClusterTest, TwoReplicasEnforceOneLimitPerUserAcrossTheMasters) {
  SluiceProcess a(config(5));
  SluiceProcess b(config(5));
  HttpClient ca(a.proxy_port());
  HttpClient cb(b.proxy_port());
  wait_until_using_redis(a, ca);
  wait_until_using_redis(b, cb);
  EXPECT_TRUE(a.process().wait_for_line("mode=cluster masters=3")) << a.process().output();
  const double failed_before = failed_operations(a) + failed_operations(b);
  constexpr int kUsers = 24;
  for (int u = 0; u < kUsers; ++u) {
    const std::string user = "user-" + std::to_string(u);
    int admitted = 0;
    for (int i = 0; i < 8; ++i) {
      if (status_for(i % 2 == 0 ? ca : cb, user) == 200) {
        ++admitted;
      }
    }
    EXPECT_EQ(admitted, 5) << user;
  }
  // The windows are spread over the masters (24 users on one of 3 would be a 3^-23 fluke).
  std::size_t masters_with_windows = 0;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    masters_with_windows += cluster.keys(i, "sluice:{p:*").empty() ? 0 : 1;
  }
  EXPECT_GE(masters_with_windows, 2U);
  EXPECT_EQ(failed_operations(a) + failed_operations(b), failed_before);
}

TEST_F(RedisClusterTest, FollowsAMovedSlotAndKeepsTheCount) {
  SluiceProcess gateway(config(5));
  HttpClient client(gateway.proxy_port());
  wait_until_using_redis(gateway, client);
  const std::string key = key_created_by(client, "alice");
  ASSERT_FALSE(key.empty());
  EXPECT_EQ(status_for(client, "alice"), 200U);
  EXPECT_EQ(status_for(client, "alice"), 200U);
  const std::uint16_t slot = slot_of(key);
  const std::size_t from = cluster.owner(slot);
  const std::size_t to = (from + 1) % cluster.size();
  const double failed_before = failed_operations(gateway);
  cluster.begin_migration(slot, from, to);
  cluster.finish_migration(slot, to);
  // The old master answers MOVED; sluice retries on the new one, where the count (3) moved too.
  EXPECT_EQ(status_for(client, "alice"), 200U);
  EXPECT_EQ(status_for(client, "alice"), 200U);
  EXPECT_EQ(status_for(client, "alice"), 429U);
  EXPECT_EQ(failed_operations(gateway), failed_before);
  const auto on_new_master = cluster.keys(to, key);
  EXPECT_EQ(on_new_master, std::vector<std::string>{key});
  EXPECT_TRUE(cluster.keys(from, key).empty());
}

TEST_F(RedisClusterTest, FollowsAskRedirectsWhileASlotIsMigrating) {
  SluiceProcess gateway(config(4));
  HttpClient client(gateway.proxy_port());
  wait_until_using_redis(gateway, client);
  const std::string key = key_created_by(client, "bob");
  ASSERT_FALSE(key.empty());
  const std::uint16_t slot = slot_of(key);
  const std::size_t from = cluster.owner(slot);
  const std::size_t to = (from + 2) % cluster.size();
  const double failed_before = failed_operations(gateway);
  cluster.begin_migration(slot, from, to);
  // The slot still belongs to `from`, which no longer has the key: it answers ASK, and sluice
  // sends ASKING + the script to `to`, where the count (1) is.
  EXPECT_EQ(status_for(client, "bob"), 200U);
  EXPECT_EQ(status_for(client, "bob"), 200U);
  EXPECT_EQ(status_for(client, "bob"), 200U);
  EXPECT_EQ(status_for(client, "bob"), 429U);
  EXPECT_EQ(cluster.owner(slot), from);  // still migrating: these were ASK redirects
  EXPECT_EQ(cluster.keys(to, key), std::vector<std::string>{key});
  cluster.finish_migration(slot, to);
  EXPECT_EQ(status_for(client, "bob"), 429U);
  EXPECT_EQ(failed_operations(gateway), failed_before);
}

TEST_F(RedisClusterTest, HybridModeExchangesEachGroupOfKeysOnItsOwnSlot) {
  // A script call's keys must share one hash slot in a cluster (else CROSSSLOT): the journal's
  // batch is grouped by slot, and every user's count still reaches the other replica.
  json c = config(3);
  c["store"]["mode"] = "hybrid";
  c["store"]["sync_ms"] = 50;
  RedisReplicaPair replicas(c);
  SluiceProcess& a = replicas.a;
  SluiceProcess& b = replicas.b;
  HttpClient& ca = replicas.ca;
  HttpClient& cb = replicas.cb;
  constexpr int kUsers = 24;
  for (int u = 0; u < kUsers; ++u) {
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(status_for(ca, "user-" + std::to_string(u)), 200U);
    }
  }
  std::set<std::uint16_t> slots;
  const auto synced = wait_until("every user's count to reach replica b", [&] {
    int denied = 0;
    for (int u = 0; u < kUsers; ++u) {
      denied += status_for(cb, "user-" + std::to_string(u)) == 429U ? 1 : 0;
    }
    return denied == kUsers;
  });
  EXPECT_TRUE(synced) << synced.message();
  for (const auto& key : window_keys()) {
    slots.insert(slot_of(key));
  }
  EXPECT_GT(slots.size(), 1U) << "the users' windows are spread over slots";
  EXPECT_EQ(failed_operations(a) + failed_operations(b), 0);
}

}  // namespace
}  // namespace sluice::testing
