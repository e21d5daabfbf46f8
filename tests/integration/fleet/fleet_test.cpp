// SPDX-License-Identifier: Apache-2.0
// The fleet (docs/fleet.md) with the real binary: three replicas on one real redis-server. A
// change made on any replica reaches all; concurrent changes on different replicas are all
// kept; If-Match makes a change conditional; Redis down means 503 and serving on; Redis back
// (with or without its data) converges; two fleets on one Redis stay apart.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/admin_client.hpp"
#include "tests/support/demo_backend.hpp"
#include "tests/support/event_stream_client.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/redis_gateway.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sluice_process.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

class FleetTest : public ::testing::Test {
 protected:
  json replica_config(const std::string& fleet = "test") {
    json c = redis_gateway_config(backend.endpoint(), redis.port(), 5);
    c["fleet"] = {{"enabled", true}, {"name", fleet}, {"heartbeat_ms", 200}};
    return c;
  }
  /// `n` replicas of fleet `fleet`, each started once the one before has joined.
  void start_replicas(int n, const std::string& fleet = "test") {
    for (int i = 0; i < n; ++i) {
      replicas.push_back(std::make_unique<SluiceProcess>(replica_config(fleet)));
    }
  }
  static json limit_of(SluiceProcess& replica) {
    return AdminClient(replica.admin_port()).get("/admin/limits/p").body;
  }
  /// Waits until every replica runs `requests` for policy p.
  void expect_everywhere(int requests) {
    for (auto& replica : replicas) {
      EXPECT_TRUE(wait_until("the change to reach every replica", [&] {
        return limit_of(*replica)["requests"] == requests;
      })) << replica->process().output();
    }
  }
  static std::uint64_t fleet_version(SluiceProcess& replica) {
    return AdminClient(replica.admin_port())
        .get("/admin/fleet")
        .body["version"]
        .get<std::uint64_t>();
  }

  DemoBackend backend;
  RedisServer redis;
  std::vector<std::unique_ptr<SluiceProcess>> replicas;
};

TEST_F(FleetTest, AChangeOnOneReplicaIsAppliedOnAllAndTheAnswerWaitsForItsOwn) {
  start_replicas(3);
  AdminClient first(replicas[0]->admin_port());
  const auto put = first.put("/admin/limits/p", {{"requests", 42}, {"window_ms", 60000}});
  ASSERT_EQ(put.status, 200U) << put.body.dump();
  EXPECT_EQ(limit_of(*replicas[0])["requests"], 42);  // the writer, at once
  expect_everywhere(42);
  const json fleet = first.get("/admin/fleet").body;
  EXPECT_EQ(fleet["name"], "test");
  EXPECT_EQ(fleet["version"], 2);  // the seed, then the change
  EXPECT_TRUE(wait_until("three replicas in the list", [&] {
    return AdminClient(replicas[1]->admin_port()).get("/admin/fleet").body["replicas"].size() == 3;
  }));
  for (auto& replica : replicas) {
    EXPECT_TRUE(wait_until("the version metric", [&] {
      return scrape_metrics(*replica).value("sluice_fleet_config_version") == 2;
    }));
    EXPECT_TRUE(wait_until("the connected gauge", [&] {
      return scrape_metrics(*replica).value("sluice_fleet_connected") == 1;
    }));
  }
  // Every replica's versions say which fleet version each is and which replica made it.
  const std::string writer = fleet["replica"];
  const json own = first.get("/admin/config/versions").body["versions"].front();
  EXPECT_EQ(own["source"], "admin");
  EXPECT_EQ(own["fleet_version"], 2);
  EXPECT_EQ(own["replica"], writer);
  const json applied =
      AdminClient(replicas[2]->admin_port()).get("/admin/config/versions").body["versions"].front();
  EXPECT_EQ(applied["source"], "fleet");
  EXPECT_EQ(applied["fleet_version"], 2);
  EXPECT_EQ(applied["replica"], writer);
  EXPECT_TRUE(replicas[0]->process().wait_for_line("\"fleet_version\":2,\"replica\":\"" + writer))
      << "the audit line names the fleet version and the replica";
  // A behaviour, not only a config: replica 3 limits at 42 per minute.
  HttpClient proxy(replicas[2]->proxy_port());
  EXPECT_EQ(status_for(proxy, "alice"), 200U);
}

// API keys added through the admin API are config (docs/identity.md "API keys"): added on one
// replica, verified on every; removed on another, refused on every.
TEST_F(FleetTest, AnApiKeyAddedOnOneReplicaIsVerifiedOnEveryAndRemovedEverywhere) {
  for (int i = 0; i < 2; ++i) {
    json c = replica_config();
    c["auth"] = {{"api_keys", {{"header", "X-Fleet-Key"}, {"keys", json::array()}}}};
    c["identity"] = json::array({{{"api_key", true}}, {{"header", "X-API-Key"}}});
    c["routes"][0]["auth"] = "required";
    replicas.push_back(std::make_unique<SluiceProcess>(c));
  }
  const std::string key = "sk-fleet-0123456789abcdef";
  const auto status_with_key = [&](SluiceProcess& replica) {
    HttpClient proxy(replica.proxy_port());
    return proxy.get("/ok", {{"X-Fleet-Key", key}}).result_int();
  };
  EXPECT_EQ(status_with_key(*replicas[1]), 401U);
  const auto put = AdminClient(replicas[0]->admin_port())
                       .put("/admin/auth/keys/bot", {{"key", key}, {"tier", "gold"}});
  ASSERT_EQ(put.status, 200U) << put.body.dump();
  EXPECT_EQ(put.body.dump().find(key), std::string::npos);
  EXPECT_TRUE(wait_until("the key to verify on the other replica", [&] {
    return status_with_key(*replicas[1]) == 200U;
  })) << replicas[1]->process().output();
  const auto removed =
      AdminClient(replicas[1]->admin_port()).send(http::verb::delete_, "/admin/auth/keys/bot", "");
  ASSERT_EQ(removed.status, 204U) << removed.body.dump();
  EXPECT_TRUE(wait_until("the key to be refused on the first replica",
                         [&] { return status_with_key(*replicas[0]) == 401U; }));
  for (auto& replica : replicas) {
    EXPECT_EQ(replica->process().output().find(key), std::string::npos) << "never logged";
  }
}

// A rollback is a change like any other: made on one replica, it becomes the fleet's next
// version everywhere.
TEST_F(FleetTest, ARollbackOnOneReplicaRollsTheFleetBack) {
  start_replicas(2);
  AdminClient first(replicas[0]->admin_port());
  ASSERT_EQ(first.put("/admin/limits/p", {{"requests", 42}, {"window_ms", 60000}}).status, 200U);
  expect_everywhere(42);
  AdminClient second(replicas[1]->admin_port());
  const json versions = second.get("/admin/config/versions").body["versions"];
  const json oldest = versions.back();  // this replica's start: the seed's limit
  const auto rollback = second.send(http::verb::post, "/admin/config/rollback",
                                    json{{"version", oldest["version"]}}.dump());
  ASSERT_EQ(rollback.status, 200U) << rollback.body.dump();
  expect_everywhere(5);
  EXPECT_EQ(fleet_version(*replicas[0]), 3U);
  EXPECT_TRUE(wait_until("the rollback in the writer's versions", [&] {
    const json newest = second.get("/admin/config/versions").body["versions"].front();
    return newest["source"] == "rollback" && newest["fleet_version"] == 3;
  }));
}

// Draining an endpoint is runtime state, not config, but in a fleet it is the fleet's: drained
// on one replica, it drains on all, on a replica that starts later, and Redis down refuses it.
TEST_F(FleetTest, DrainingAnEndpointOnOneReplicaDrainsItOnEvery) {
  start_replicas(2);
  const std::string path = "/admin/backends/demo/endpoints/" + backend.endpoint() + "/state";
  const auto state_on = [&](SluiceProcess& replica) {
    return AdminClient(replica.admin_port())
        .get("/admin/backends/demo/endpoints")
        .body["endpoints"][0]["state"];
  };
  const auto put = AdminClient(replicas[0]->admin_port()).put(path, {{"state", "draining"}});
  ASSERT_EQ(put.status, 200U) << put.body.dump();
  EXPECT_EQ(state_on(*replicas[0]), "draining");
  EXPECT_TRUE(wait_until("the drain on the other replica",
                         [&] { return state_on(*replicas[1]) == "draining"; }));
  replicas.push_back(std::make_unique<SluiceProcess>(replica_config()));
  EXPECT_TRUE(wait_until("the drain on a replica started later",
                         [&] { return state_on(*replicas[2]) == "draining"; }));
  ASSERT_EQ(AdminClient(replicas[2]->admin_port()).put(path, {{"state", "active"}}).status, 200U);
  for (auto& replica : replicas) {
    EXPECT_TRUE(
        wait_until("active again everywhere", [&] { return state_on(*replica) == "healthy"; }));
  }
  redis.stop();
  const auto refused = AdminClient(replicas[1]->admin_port()).put(path, {{"state", "draining"}});
  EXPECT_EQ(refused.status, 503U);
  EXPECT_EQ(refused.body["error"], "fleet_unavailable");
  EXPECT_EQ(state_on(*replicas[1]), "healthy");  // changed nothing
}

TEST_F(FleetTest, ConcurrentChangesOnDifferentReplicasAreAllKept) {
  start_replicas(3);
  std::vector<std::thread> writers;
  for (int i = 0; i < 3; ++i) {
    writers.emplace_back([&, i] {
      AdminClient client(replicas[static_cast<std::size_t>(i)]->admin_port());
      for (int k = 0; k < 5; ++k) {
        const auto put = client.put(
            "/admin/limits/p/overrides/user-" + std::to_string(i) + "-" + std::to_string(k),
            {{"requests", 10 + k}});
        EXPECT_EQ(put.status, 200U) << put.body.dump();
      }
    });
  }
  for (auto& writer : writers) {
    writer.join();
  }
  for (auto& replica : replicas) {
    EXPECT_TRUE(wait_until("all 15 overrides on every replica", [&] {
      return AdminClient(replica->admin_port())
                 .get("/admin/config")
                 .body["overrides"]["p"]
                 .size() == 15;
    })) << AdminClient(replica->admin_port()).get("/admin/config").body["overrides"].dump();
  }
  EXPECT_EQ(fleet_version(*replicas[0]), 16U);  // the seed and 15 changes, none lost
}

TEST_F(FleetTest, IfMatchMakesAChangeConditionalOnTheFleetVersion) {
  start_replicas(2);
  HttpClient first(replicas[0]->admin_port());
  const auto stale = first.request(http::verb::put, "/admin/limits/p", {{"If-Match", "\"7\""}},
                                   R"({"requests": 9, "window_ms": 60000})");
  EXPECT_EQ(stale.result_int(), 412);
  EXPECT_EQ(json::parse(stale.body())["error"], "version_mismatch");
  EXPECT_EQ(json::parse(stale.body())["current"], 1);
  const auto fresh = first.request(http::verb::put, "/admin/limits/p", {{"If-Match", "1"}},
                                   R"({"requests": 9, "window_ms": 60000})");
  EXPECT_EQ(fresh.result_int(), 200) << fresh.body();
  expect_everywhere(9);
  // The other replica made its change on version 1 too: the fleet moved on, so it is refused.
  HttpClient second(replicas[1]->admin_port());
  const auto late = second.request(http::verb::put, "/admin/limits/p", {{"If-Match", "1"}},
                                   R"({"requests": 11, "window_ms": 60000})");
  EXPECT_EQ(late.result_int(), 412);
  EXPECT_EQ(json::parse(late.body())["current"], 2);
  const auto bad = second.request(http::verb::put, "/admin/limits/p", {{"If-Match", "two"}},
                                  R"({"requests": 11, "window_ms": 60000})");
  EXPECT_EQ(bad.result_int(), 400);
}

TEST_F(FleetTest, RedisDownKeepsServingAndRefusesChangesRedisBackConverges) {
  start_replicas(2);
  AdminClient first(replicas[0]->admin_port());
  ASSERT_EQ(first.put("/admin/limits/p", {{"requests", 30}, {"window_ms", 60000}}).status, 200U);
  expect_everywhere(30);
  redis.stop();
  const auto refused = first.put("/admin/limits/p", {{"requests", 31}, {"window_ms", 60000}});
  EXPECT_EQ(refused.status, 503U);
  EXPECT_EQ(refused.body["error"], "fleet_unavailable");
  EXPECT_EQ(limit_of(*replicas[0])["requests"], 30);  // changed nothing
  EXPECT_TRUE(wait_until("the connected gauge to drop", [&] {
    return scrape_metrics(*replicas[1]).value("sluice_fleet_connected") == 0;
  }));
  HttpClient proxy(replicas[1]->proxy_port());
  EXPECT_EQ(proxy.get("/ok", {{"X-API-Key", "bob"}}).result_int(), 200);  // serving on

  // Back without its data: a replica re-seeds the version it runs; changes work again.
  redis.start();
  EXPECT_TRUE(wait_until("the fleet to be re-seeded", [&] {
    return redis.command({"HGET", "sluice-fleet:{test}:doc", "version"}) == "2";
  }));
  EXPECT_TRUE(wait_until("changes to be taken again", [&] {
    return first.put("/admin/limits/p", {{"requests", 33}, {"window_ms", 60000}}).status == 200;
  }));
  expect_everywhere(33);
}

TEST_F(FleetTest, AReplicaThatWasAwayCatchesUpAndTwoFleetsStayApart) {
  start_replicas(2);
  auto other = std::make_unique<SluiceProcess>(replica_config("other"));
  AdminClient first(replicas[0]->admin_port());
  replicas[1]->process().send_signal(SIGSTOP);  // away (a long pause)
  ASSERT_EQ(first.put("/admin/limits/p", {{"requests", 50}, {"window_ms", 60000}}).status, 200U);
  ASSERT_EQ(first.put("/admin/limits/p", {{"requests", 51}, {"window_ms", 60000}}).status, 200U);
  replicas[1]->process().send_signal(SIGCONT);
  expect_everywhere(51);
  EXPECT_EQ(limit_of(*other)["requests"], 5);  // the other fleet never saw it
  EXPECT_EQ(fleet_version(*other), 1U);
  // A restarted replica takes the fleet's version, not its file's.
  replicas[1]->restart();
  EXPECT_EQ(limit_of(*replicas[1])["requests"], 51);
}

// SIGHUP (or config_watch) in a fleet applies the file's local part; the shared part stays the
// fleet's, so one replica's file cannot fork the fleet.
TEST_F(FleetTest, AReloadKeepsTheFleetsSharedPartAndAppliesTheLocalOne) {
  start_replicas(1);
  AdminClient admin(replicas[0]->admin_port());
  ASSERT_EQ(admin.put("/admin/limits/p", {{"requests", 60}, {"window_ms", 60000}}).status, 200U);
  json file = replica_config();
  file["limits"]["p"]["requests"] = 3;
  file["http"] = {{"idle_timeout_ms", 12345}};
  replicas[0]->rewrite_config(file);
  const std::size_t mark = replicas[0]->process().line_count();
  replicas[0]->reload();
  ASSERT_TRUE(replicas[0]->process().wait_for_line_after(mark, "reload ok"));
  EXPECT_TRUE(replicas[0]->process().wait_for_line_after(mark, "reload keeps fleet version 2"));
  EXPECT_EQ(limit_of(*replicas[0])["requests"], 60);
  EXPECT_EQ(admin.get("/admin/config").body["http"]["idle_timeout_ms"], 12345);
  const json reload = admin.get("/admin/config/versions").body["versions"].front();
  EXPECT_EQ(reload["source"], "reload");
  EXPECT_EQ(reload["fleet_version"], 2);  // made here, running fleet version 2
  EXPECT_EQ(reload["replica"], admin.get("/admin/fleet").body["replica"]);
}

TEST_F(FleetTest, ConfigCheckNeedsARedisStoreForAFleet) {
  json c = minimal_gateway_config({backend.endpoint()});
  c["fleet"] = {{"enabled", true}};
  SluiceProcess::Options options;
  options.wait_ready = false;
  SluiceProcess gateway(c, options);
  EXPECT_TRUE(gateway.process().wait_for_line("fleet.enabled")) << gateway.process().output();
  EXPECT_TRUE(gateway.process().wait_for_line("needs store.type \"redis\""));
}

// Heavy hitters of the whole fleet: each replica publishes its sketches' answers and
// `?scope=fleet` sums them, so a user spread over replicas shows with its fleet-wide count.
TEST_F(FleetTest, FleetScopeHeavyHittersSumEveryReplicasSketch) {
  json config = replica_config();
  config["access_log"] = {{"user_hash_key_env", "SLUICE_TEST_USER_KEY"}};
  SluiceProcess::Options options;
  options.env = {{"SLUICE_TEST_USER_KEY", "a-shared-secret-of-32-characters"}};
  for (int i = 0; i < 2; ++i) {
    replicas.push_back(std::make_unique<SluiceProcess>(config, options));
  }
  HttpClient first(replicas[0]->proxy_port());
  HttpClient second(replicas[1]->proxy_port());
  // 5 per minute in Redis: the sixth is limited, unless a replica still decides locally (its
  // store connecting); either way each replica counts what it decided.
  int limited = 0;
  for (int i = 0; i < 6; ++i) {
    limited += status_for(i < 3 ? first : second, "alice") == 429U ? 1 : 0;
  }
  EXPECT_EQ(status_for(second, "bob"), 200U);
  AdminClient admin(replicas[0]->admin_port());
  json top;
  EXPECT_TRUE(wait_until("both replicas' counts in the fleet's answer", [&] {
    top = admin.get("/admin/limits/p/top?scope=fleet").body;
    return top["replicas"].size() == 2 && !top["users"].empty() && top["users"][0]["count"] == 6 &&
           top["users"].size() == 2;
  })) << top.dump();
  EXPECT_EQ(top["scope"], "fleet");
  EXPECT_EQ(top["users"][0]["limited"], limited);
  EXPECT_EQ(top["users"][1]["count"], 1);
  EXPECT_EQ(top["error_bound"], 0);
  EXPECT_FALSE(top.contains("warning"));
  const json local = admin.get("/admin/limits/p/top").body;  // this replica's share only
  ASSERT_EQ(local["users"].size(), 1U) << local.dump();
  EXPECT_EQ(local["users"][0]["count"], 3);
  EXPECT_EQ(local["users"][0]["user"], top["users"][0]["user"]);  // one label fleet-wide
  EXPECT_EQ(admin.get("/admin/limits/p/top?scope=region").status, 400U);
}

TEST_F(FleetTest, FleetScopeWithoutAFleetIsAConflict) {
  json config = replica_config();
  config["fleet"]["enabled"] = false;
  SluiceProcess alone(config);
  const auto top = AdminClient(alone.admin_port()).get("/admin/limits/p/top?scope=fleet");
  EXPECT_EQ(top.status, 409U) << top.body.dump();
  EventStreamClient::Options options;
  options.target = "/admin/events?scope=fleet";
  EventStreamClient events(alone.admin_port(), options);
  EXPECT_EQ(events.status(), 409U) << events.body();
}

// The fleet's event stream: every replica's events, each with the replica it happened on.
TEST_F(FleetTest, FleetScopeEventsCarryEveryReplicasEventsWithItsName) {
  start_replicas(2);
  const std::string second_id =
      AdminClient(replicas[1]->admin_port()).get("/admin/fleet").body["replica"];
  EventStreamClient::Options options;
  options.target = "/admin/events?scope=fleet";
  EventStreamClient fleet_events(replicas[0]->admin_port(), options);
  ASSERT_EQ(fleet_events.status(), 200U);
  EventStreamClient local_events(replicas[0]->admin_port());
  ASSERT_EQ(local_events.status(), 200U);
  ASSERT_EQ(AdminClient(replicas[1]->admin_port())
                .put("/admin/limits/p", {{"requests", 8}, {"window_ms", 60000}})
                .status,
            200U);
  std::optional<SseEvent> change;
  while (auto event = fleet_events.next(std::chrono::seconds(2))) {
    if (event->type == "admin_change") {
      change = event;
      break;
    }
  }
  ASSERT_TRUE(change) << "no admin_change of the other replica within 2 s";
  EXPECT_EQ(change->json()["replica"], second_id);
  EXPECT_EQ(change->json()["subject"], "p");
  EXPECT_TRUE(change->json()["ts"].is_string());
  while (auto event = local_events.next(std::chrono::milliseconds(500))) {
    EXPECT_NE(event->type, "admin_change") << "the local stream shows this replica's only";
  }
  EventStreamClient::Options bad;
  bad.target = "/admin/events?scope=galaxy";
  EventStreamClient wrong(replicas[0]->admin_port(), bad);
  EXPECT_EQ(wrong.status(), 400U);
}

}  // namespace
}  // namespace sluice::testing
