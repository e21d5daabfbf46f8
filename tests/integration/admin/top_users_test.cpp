// SPDX-License-Identifier: Apache-2.0
// GET /admin/limits/{policy}/top (docs/operating.md "Heavy hitters"): skewed traffic through the
// real binary puts the heavy user first, under the access log's own label for it, with its 429s
// counted; policies the admin API adds get a sketch; admin.top_users false turns it all off.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/integration/admin/admin_fixture.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

class AdminTopUsersTest : public AdminFixture {
 protected:
  /// Sends `requests` GETs as user `key`, the first with X-Request-Id `id`; counts the 429s.
  static unsigned send(HttpClient& proxy, const std::string& key, int requests,
                       const std::string& id) {
    unsigned limited = 0;
    for (int i = 0; i < requests; ++i) {
      Headers headers{{"X-API-Key", key}};
      if (i == 0) {
        headers.emplace_back("X-Request-Id", id);
      }
      const unsigned status = proxy.get("/ok", headers).result_int();
      EXPECT_TRUE(status == 200U || status == 429U) << status;
      limited += status == 429U ? 1U : 0U;
    }
    return limited;
  }

  /// The access log's `user` of the request logged with X-Request-Id `id`.
  static std::string logged_user(SluiceProcess& gateway, const std::string& id) {
    std::string line;
    if (!gateway.process().wait_for_line(R"("request_id":")" + id + "\"", kDefaultTimeout, &line)) {
      ADD_FAILURE() << "no access log line for " << id;
      return {};
    }
    return json::parse(line).at("user").get<std::string>();
  }
};

TEST_F(AdminTopUsersTest, TheHeavyUserComesFirstUnderItsAccessLogLabel) {
  config = admin_config(backend.endpoint(), 40);  // policy "p": 40 requests per 60 s
  auto gateway = start();
  HttpClient proxy(gateway->proxy_port());
  // Skewed: one heavy user well past the limit, a medium one, a tail of light ones.
  const std::map<std::string, int> traffic = {{"heavy", 100}, {"medium", 30}, {"light-1", 6},
                                              {"light-2", 5}, {"light-3", 4}, {"light-4", 3},
                                              {"light-5", 2}, {"light-6", 1}};
  std::map<std::string, unsigned> limited;
  for (const auto& [key, requests] : traffic) {
    limited[key] = send(proxy, key, requests, "top-" + key);
  }
  ASSERT_EQ(limited["heavy"], 60U);  // 100 against a limit of 40
  ASSERT_EQ(limited["medium"], 0U);

  // Asked at once: the answer takes in what the worker queued, not only what the last 50 ms
  // drain did (decision 0018).
  auto client = admin(*gateway);
  const auto reply = client.get("/admin/limits/p/top?n=3");
  ASSERT_EQ(reply.status, 200U) << reply.raw.body();
  const json& body = reply.body;
  EXPECT_EQ(body["policy"], "p");
  EXPECT_EQ(body["window_ms"], 60000);
  EXPECT_EQ(body["error_bound"], 0) << "8 users fit the sketch: every count is exact";
  EXPECT_EQ(body["tracked"], 8);
  EXPECT_EQ(body["dropped"], 0) << "the worker's ring never filled";
  ASSERT_EQ(body["users"].size(), 3U);
  EXPECT_EQ(body["users"][0],
            json({{"user", logged_user(*gateway, "top-heavy")}, {"count", 100}, {"limited", 60}}));
  EXPECT_EQ(body["users"][1],
            json({{"user", logged_user(*gateway, "top-medium")}, {"count", 30}, {"limited", 0}}));
  EXPECT_EQ(body["users"][2]["user"], logged_user(*gateway, "top-light-1"));
  EXPECT_EQ(body["users"][2]["count"], 6);

  // The default n is 10: every user, the lightest last.
  const auto all = client.get("/admin/limits/p/top");
  ASSERT_EQ(all.status, 200U);
  ASSERT_EQ(all.body["users"].size(), 8U);
  EXPECT_EQ(all.body["users"][7]["user"], logged_user(*gateway, "top-light-6"));
  EXPECT_EQ(all.body["users"][7]["count"], 1);
  unsigned limited_total = 0;
  for (const auto& u : all.body["users"]) {
    limited_total += u["limited"].get<unsigned>();
  }
  EXPECT_EQ(limited_total, 60U) << "the limited counts are the 429s";
}

TEST_F(AdminTopUsersTest, AnswersAnUnknownPolicyOrABadNWithAnError) {
  auto gateway = start();
  auto client = admin(*gateway);
  const auto unknown = client.get("/admin/limits/nope/top");
  EXPECT_EQ(unknown.status, 404U);
  EXPECT_EQ(unknown.body["error"], "no policy named \"nope\"");
  for (const char* n : {"0", "101", "ten", "", "5x", "-1"}) {
    const auto bad = client.get(std::string("/admin/limits/p/top?n=") + n);
    EXPECT_EQ(bad.status, 400U) << "n=" << n;
    EXPECT_EQ(bad.body["field"], "(query) n") << "n=" << n;
  }
  EXPECT_EQ(client.get("/admin/limits/p/top?n=100").status, 200U);
  EXPECT_EQ(client.post("/admin/limits/p/top").status, 405U);
}

TEST_F(AdminTopUsersTest, PoliciesTheAdminApiAddsGetASketchAndRemovedOnesLoseIt) {
  auto gateway = start();
  auto client = admin(*gateway);
  ASSERT_EQ(client.put("/admin/limits/q", {{"requests", 10}, {"window_ms", 30000}}).status, 200U);
  const auto added = client.get("/admin/limits/q/top");
  ASSERT_EQ(added.status, 200U) << added.raw.body();
  EXPECT_EQ(added.body["window_ms"], 30000);
  EXPECT_EQ(added.body["tracked"], 0);
  // Route "all" moves to q: its requests count there.
  json routes = client.get("/admin/routes").body;
  routes["routes"][0]["limit"] = "q";
  ASSERT_EQ(client.put("/admin/routes", routes).status, 200U);
  HttpClient proxy(gateway->proxy_port());
  EXPECT_EQ(send(proxy, "alice", 3, "q-alice"), 0U);
  const auto counted = client.get("/admin/limits/q/top");
  ASSERT_EQ(counted.body["users"].size(), 1U);
  EXPECT_EQ(counted.body["users"][0]["user"], logged_user(*gateway, "q-alice"));
  EXPECT_EQ(counted.body["users"][0]["count"], 3);
  ASSERT_EQ(client.del("/admin/limits/p").status, 204U);
  EXPECT_EQ(client.get("/admin/limits/p/top").status, 404U);
}

TEST_F(AdminTopUsersTest, TurnedOffItAnswers409AndTheProxyStillLimits) {
  config["admin"]["top_users"] = false;
  auto gateway = start();
  HttpClient proxy(gateway->proxy_port());
  EXPECT_EQ(send(proxy, "alice", 7, "off-alice"), 2U);  // the fixture's limit is 5
  auto client = admin(*gateway);
  const auto off = client.get("/admin/limits/p/top");
  EXPECT_EQ(off.status, 409U);
  EXPECT_EQ(off.body, json({{"error", "top_users is off (admin.top_users)"}}));
  EXPECT_EQ(client.get("/admin/config").body["admin"]["top_users"], false);
}

}  // namespace
}  // namespace sluice::testing
