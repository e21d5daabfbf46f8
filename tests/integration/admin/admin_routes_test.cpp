// SPDX-License-Identifier: Apache-2.0
// /admin/routes, validated as a whole; and the admin API under load: changes while requests
// flow lose no request, and concurrent admin requests lose no change.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/integration/admin/admin_fixture.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

class AdminRoutesTest : public AdminFixture {};

json route(const char* name, const char* prefix, bool strip = false) {
  return {{"name", name}, {"prefix", prefix}, {"backend", "demo"}, {"strip_prefix", strip}};
}

TEST_F(AdminRoutesTest, ShowsTheTableInMatchOrderWithDefaults) {
  config["routes"] = json::array({route("a", "/a"), route("b", "/")});
  auto gateway = start();
  const auto reply = admin(*gateway).get("/admin/routes");
  ASSERT_EQ(reply.status, 200U);
  EXPECT_EQ(reply.body, json::parse(R"({"routes": [
      {"name":"a","prefix":"/a","backend":"demo","limit":null,"methods":null,"host":null,
       "strip_prefix":false,"upgrades":true,"auth":"off","strip_credentials":false},
      {"name":"b","prefix":"/","backend":"demo","limit":null,"methods":null,"host":null,
       "strip_prefix":false,"upgrades":true,"auth":"off","strip_credentials":false}]})"));
}

TEST_F(AdminRoutesTest, AReplacedTableServesTheNextRequest) {
  auto gateway = start();
  auto client = admin(*gateway);
  HttpClient proxy(gateway->proxy_port());
  EXPECT_EQ(proxy.get("/ok").result_int(), 200);
  const json table = {{"routes", json::array({route("v2", "/v2", true)})}};
  const auto replaced = client.put("/admin/routes", table);
  ASSERT_EQ(replaced.status, 200U) << replaced.raw.body();
  EXPECT_EQ(replaced.body["routes"][0]["name"], "v2");
  EXPECT_EQ(proxy.get("/ok").result_int(), 404);  // no route any more
  EXPECT_EQ(proxy.get("/v2/ok").result_int(), 200);
}

TEST_F(AdminRoutesTest, ATableWithOneBadRouteIsRejectedAsAWhole) {
  auto gateway = start();
  auto client = admin(*gateway);
  HttpClient proxy(gateway->proxy_port());
  json bad_backend = route("x", "/x");
  bad_backend["backend"] = "nope";
  json bad_limit = route("y", "/y");
  bad_limit["limit"] = "missing";
  const json table = {{"routes", json::array({route("fine", "/fine"), bad_backend, bad_limit,
                                              route("fine", "/z")})}};
  const auto reply = client.put("/admin/routes", table);
  EXPECT_EQ(reply.status, 400U);
  EXPECT_EQ(reply.body["error"], "no such backend");
  EXPECT_EQ(reply.body["field"], "routes[1].backend");
  EXPECT_EQ(reply.body["problems"],
            json::parse(R"json([{"field":"routes[1].backend","error":"no such backend"},
                            {"field":"routes[2].limit","error":"no such policy"},
                            {"field":"routes[3].name",
                             "error":"duplicate route name (first used by routes[0])"}])json"));
  EXPECT_EQ(client.get("/admin/routes").body["routes"][0]["name"], "all");
  EXPECT_EQ(proxy.get("/ok").result_int(), 200);  // the old "all" route still serves
  EXPECT_EQ(client.put("/admin/routes", {{"routes", json::array()}, {"extra", 1}}).body["field"],
            "extra");
  EXPECT_EQ(client.put("/admin/routes", json::object()).body["field"], "routes");
  EXPECT_EQ(client.put("/admin/routes", {{"routes", {{"name", "r"}}}}).status, 400U);
}

TEST_F(AdminRoutesTest, ChangesUnderProxyLoadLoseNoRequest) {
  config["limits"]["p"]["requests"] = 1000000;
  DemoBackend other;
  auto gateway = start();
  std::atomic<bool> stop{false};
  std::atomic<int> served{0};
  std::vector<std::string> failures;  // written by the load threads, read after join
  std::mutex failures_mutex;
  std::vector<std::thread> load;
  struct JoinAll {  // an admin call that throws must not leave joinable threads behind
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~JoinAll() {
      stop = true;
      for (auto& thread : threads) {
        if (thread.joinable()) {
          thread.join();
        }
      }
    }
  } join_all{stop, load};
  for (int t = 0; t < 4; ++t) {
    load.emplace_back([&, t] {
      try {
        HttpClient proxy(gateway->proxy_port());
        for (int i = 0; !stop.load(); ++i) {
          const Response res =
              proxy.get("/ok", {{"X-API-Key", "user-" + std::to_string(i % 50 + t)}});
          if (res.result_int() != 200) {
            const std::lock_guard lock(failures_mutex);
            failures.push_back(std::to_string(res.result_int()) + " " + res.body());
          }
          served.fetch_add(1);
        }
      } catch (const std::exception& e) {  // a lost request: reported, not std::terminate
        const std::lock_guard lock(failures_mutex);
        failures.push_back(std::string("client thread: ") + e.what());
        stop = true;
      }
    });
  }
  try {
    auto client = admin(*gateway);
    const std::vector<std::string> endpoints{backend.endpoint(), other.endpoint()};
    // At least 40 rounds of every kind of change, and until the load has seen 2,000 responses.
    for (int round = 0; !stop.load() && (round < 40 || served.load() < 2000); ++round) {
      const auto& endpoint = endpoints[static_cast<std::size_t>(round) % 2];
      EXPECT_EQ(client
                    .put("/admin/limits/p", {{"requests", 1000000 - round},
                                             {"window_ms", 60000},
                                             {"buckets", round % 2 == 0 ? 10 : 20}})
                    .status,
                200U);
      EXPECT_EQ(
          client.put("/admin/limits/p/overrides/user-1", {{"requests", 500000 + round}}).status,
          200U);
      EXPECT_EQ(client.put("/admin/backends/demo/breaker", {{"k", 1.5 + round % 3}}).status, 200U);
      EXPECT_EQ(client.put("/admin/backends/demo/endpoints", {{"endpoints", {endpoint}}}).status,
                200U);
      json table = {{"routes", json::array({route(round % 2 == 0 ? "all" : "all-2", "/")})}};
      table["routes"][0]["limit"] = "p";
      EXPECT_EQ(client.put("/admin/routes", table).status, 200U);
    }
  } catch (const std::exception& e) {  // the gateway went away: show why
    ADD_FAILURE() << e.what() << "\n" << gateway->process().output();
  }
  stop = true;
  for (auto& thread : load) {
    thread.join();
  }
  EXPECT_TRUE(failures.empty()) << failures.size() << " failed, first: " << failures.front() << "\n"
                                << gateway->process().output();
  EXPECT_GE(served.load(), 2000);
  EXPECT_TRUE(gateway->process().running());
}

TEST_F(AdminRoutesTest, ConcurrentAdminChangesAreSerializedAndNoneIsLost) {
  config["admin"]["persist"] = true;
  auto gateway = start();
  constexpr int kClients = 8;
  constexpr int kEach = 10;
  std::vector<std::thread> clients;
  std::atomic<int> accepted{0};
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto client = admin(*gateway);
      for (int i = 0; i < kEach; ++i) {
        const std::string key = "k" + std::to_string(c) + "-" + std::to_string(i);
        if (client.put("/admin/limits/p/overrides/" + key, {{"requests", c * 100 + i}}).status ==
            200U) {
          accepted.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : clients) {
    thread.join();
  }
  EXPECT_EQ(accepted.load(), kClients * kEach);
  const json in_memory = admin(*gateway).get("/admin/config").body["overrides"]["p"];
  const json on_disk = gateway->read_config()["overrides"]["p"];
  EXPECT_EQ(in_memory.size(), static_cast<std::size_t>(kClients * kEach));
  EXPECT_EQ(on_disk, in_memory);
}

}  // namespace
}  // namespace sluice::testing
