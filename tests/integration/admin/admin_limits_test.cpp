// SPDX-License-Identifier: Apache-2.0
// /admin/limits: policies, overrides and key lookups, applied to the next request on every
// thread without losing the counts already in the windows; bad bodies change nothing.
#include <gtest/gtest.h>

#include "tests/integration/admin/admin_fixture.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

class AdminLimitsTest : public AdminFixture {};

json policy(int requests, int buckets = 10, const char* mode = "enforce") {
  return {{"requests", requests}, {"window_ms", 60000}, {"buckets", buckets}, {"mode", mode}};
}

TEST_F(AdminLimitsTest, ListsEveryPolicyWithItsDefaultsSpelledOut) {
  config["limits"]["login"] = {{"requests", 3}, {"window_ms", 1000}};
  auto gateway = start();
  auto client = admin(*gateway);
  const auto reply = client.get("/admin/limits");
  EXPECT_EQ(reply.status, 200U);
  EXPECT_EQ(reply.body,
            json({{"p", policy(5)},
                  {"login",
                   {{"requests", 3}, {"window_ms", 1000}, {"buckets", 10}, {"mode", "enforce"}}}}));
  EXPECT_EQ(reply.raw[http::field::content_type], "application/json");
  EXPECT_EQ(client.get("/admin/limits/p").body, policy(5));
}

TEST_F(AdminLimitsTest, LoweringALimitMidWindowBitesOnTheNextRequestAndKeepsTheCounts) {
  auto gateway = start();
  auto client = admin(*gateway);
  HttpClient proxy(gateway->proxy_port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(status_for(proxy, "alice"), 200U);
  }
  const auto changed = client.put("/admin/limits/p", policy(3));
  ASSERT_EQ(changed.status, 200U) << changed.raw.body();
  EXPECT_EQ(changed.body, policy(3));
  // alice already has 3 in the window: the very next request is limited.
  const Response limited = proxy.get("/ok", {{"X-API-Key", "alice"}});
  EXPECT_EQ(limited.result_int(), 429);
  EXPECT_EQ(limited["RateLimit-Policy"], R"("p";q=3;w=60)");
  const auto state = client.get("/admin/limits/p/keys/alice").body;
  EXPECT_EQ(state["count"], 3);
  EXPECT_EQ(state["limit"], 3);
  EXPECT_EQ(state["remaining"], 0);
  // Raising it again gives back exactly the difference.
  ASSERT_EQ(client.put("/admin/limits/p", policy(4)).status, 200U);
  EXPECT_EQ(status_for(proxy, "alice"), 200U);
  EXPECT_EQ(status_for(proxy, "alice"), 429U);
}

TEST_F(AdminLimitsTest, ChangingTheBucketsCarriesEachKeysCountIntoTheNewWindow) {
  auto gateway = start();
  auto client = admin(*gateway);
  HttpClient proxy(gateway->proxy_port());
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(status_for(proxy, "alice"), 200U);
  }
  ASSERT_EQ(client.put("/admin/limits/p", policy(5, 60)).status, 200U);
  EXPECT_EQ(client.get("/admin/limits/p/keys/alice").body["count"], 4);
  EXPECT_EQ(status_for(proxy, "alice"), 200U);
  EXPECT_EQ(status_for(proxy, "alice"), 429U);  // never a fresh allowance
}

TEST_F(AdminLimitsTest, KeyLookupsShowTheStateTheNextDecisionWillSee) {
  auto gateway = start();
  auto client = admin(*gateway);
  HttpClient proxy(gateway->proxy_port());
  ASSERT_EQ(status_for(proxy, "team/a b"), 200U);
  ASSERT_EQ(status_for(proxy, "team/a b"), 200U);
  const auto state = client.get("/admin/limits/p/keys/team%2Fa%20b");
  ASSERT_EQ(state.status, 200U);
  EXPECT_EQ(state.body["key"], "team/a b");  // the operator's own key, shown back
  EXPECT_EQ(state.body["count"], 2);
  EXPECT_EQ(state.body["limit"], 5);
  EXPECT_EQ(state.body["remaining"], 3);
  EXPECT_GT(state.body["reset_ms"].get<int>(), 54000);  // the oldest bucket leaves in ~60 s
  EXPECT_LE(state.body["reset_ms"].get<int>(), 60000);
  // A lookup counts nothing.
  EXPECT_EQ(client.get("/admin/limits/p/keys/team%2Fa%20b").body["count"], 2);
  EXPECT_EQ(
      client.get("/admin/limits/p/keys/nobody").body,
      json({{"key", "nobody"}, {"count", 0}, {"limit", 5}, {"remaining", 5}, {"reset_ms", 0}}));
  EXPECT_EQ(client.get("/admin/limits/nope/keys/alice").status, 404U);
}

TEST_F(AdminLimitsTest, OverridesApplyToTheNextRequestAndCanBeRemoved) {
  auto gateway = start();
  auto client = admin(*gateway);
  HttpClient proxy(gateway->proxy_port());
  const auto put = client.put("/admin/limits/p/overrides/partner", {{"requests", 2}});
  ASSERT_EQ(put.status, 200U) << put.raw.body();
  EXPECT_EQ(put.body, json({{"requests", 2}}));
  EXPECT_EQ(client.get("/admin/limits/p/overrides/partner").body, json({{"requests", 2}}));
  EXPECT_EQ(status_for(proxy, "partner"), 200U);
  EXPECT_EQ(status_for(proxy, "partner"), 200U);
  EXPECT_EQ(status_for(proxy, "partner"), 429U);
  EXPECT_EQ(client.get("/admin/limits/p/keys/partner").body["limit"], 2);
  EXPECT_EQ(client.del("/admin/limits/p/overrides/partner").status, 204U);
  EXPECT_EQ(client.get("/admin/limits/p/overrides/partner").status, 404U);
  EXPECT_EQ(client.del("/admin/limits/p/overrides/partner").status, 404U);
  EXPECT_EQ(client.get("/admin/config").body["overrides"], json::object());
  // Back to the policy's 5, with the 2 already counted.
  EXPECT_EQ(status_for(proxy, "partner"), 200U);
  EXPECT_EQ(client.get("/admin/limits/p/keys/partner").body["count"], 3);
  EXPECT_EQ(client.put("/admin/limits/nope/overrides/partner", {{"requests", 2}}).status, 404U);
}

TEST_F(AdminLimitsTest, CreatesAPolicyAndDeletesItOnceNoRouteUsesIt) {
  auto gateway = start();
  auto client = admin(*gateway);
  const auto created = client.put("/admin/limits/login", {{"requests", 2}, {"window_ms", 1000}});
  ASSERT_EQ(created.status, 200U) << created.raw.body();
  EXPECT_EQ(created.body["buckets"], 10);
  ASSERT_EQ(client.put("/admin/limits/login/overrides/bob", {{"requests", 9}}).status, 200U);
  // In use: 409, and nothing changes.
  const auto in_use = client.del("/admin/limits/p");
  EXPECT_EQ(in_use.status, 409U);
  EXPECT_EQ(in_use.body, json({{"error", R"(policy "p" is used by route "all")"},
                               {"field", "routes[0].limit"}}));
  EXPECT_TRUE(client.get("/admin/limits").body.contains("p"));
  // Unused: deleted with its overrides.
  EXPECT_EQ(client.del("/admin/limits/login").status, 204U);
  EXPECT_FALSE(client.get("/admin/limits").body.contains("login"));
  EXPECT_EQ(client.get("/admin/config").body["overrides"], json::object());
  EXPECT_EQ(client.del("/admin/limits/login").status, 404U);
}

struct BadBody {
  const char* name;
  std::string body;
  json error;  // the expected {"error", "field"}
};

class AdminLimitsBadBodyTest : public AdminLimitsTest,
                               public ::testing::WithParamInterface<BadBody> {};

TEST_P(AdminLimitsBadBodyTest, IsRejectedWith400AndChangesNothing) {
  auto gateway = start();
  auto client = admin(*gateway);
  HttpClient proxy(gateway->proxy_port());
  ASSERT_EQ(status_for(proxy, "alice"), 200U);
  const json before = client.get("/admin/config").body;
  const json file_before = gateway->read_config();

  const auto reply = client.put_text("/admin/limits/p", GetParam().body);
  EXPECT_EQ(reply.status, 400U) << reply.raw.body();
  EXPECT_EQ(reply.body["error"], GetParam().error["error"]) << reply.raw.body();
  EXPECT_EQ(reply.body["field"], GetParam().error["field"]) << reply.raw.body();

  EXPECT_EQ(client.get("/admin/config").body, before);
  EXPECT_EQ(gateway->read_config(), file_before);
  EXPECT_EQ(client.get("/admin/limits/p/keys/alice").body["count"], 1);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(status_for(proxy, "alice"), 200U);  // still the old limit of 5
  }
  EXPECT_EQ(status_for(proxy, "alice"), 429U);
}

INSTANTIATE_TEST_SUITE_P(
    EveryKind, AdminLimitsBadBodyTest,
    ::testing::Values(
        BadBody{"MalformedJson",
                R"({"requests": 1,)",
                {{"error",
                  "invalid JSON at line 1, column 16: syntax error while parsing object "
                  "key - unexpected end of input; expected string literal"},
                 {"field", "(body)"}}},
        BadBody{"NotAnObject", "[1, 2]", {{"error", "must be an object"}, {"field", "limits.p"}}},
        BadBody{"WrongType",
                R"({"requests": "ten", "window_ms": 60000})",
                {{"error", "must be an integer"}, {"field", "limits.p.requests"}}},
        BadBody{"UnknownField",
                R"({"requests": 1, "window_ms": 60000, "burst": 3})",
                {{"error", "unknown field"}, {"field", "limits.p.burst"}}},
        BadBody{"OutOfRange",
                R"({"requests": 0, "window_ms": 60000})",
                {{"error", "must be between 1 and 4294967295"}, {"field", "limits.p.requests"}}},
        BadBody{"MissingRequired",
                R"({"requests": 1})",
                {{"error", "is required"}, {"field", "limits.p.window_ms"}}},
        BadBody{"BucketsDoNotDivide",
                R"({"requests": 1, "window_ms": 1000, "buckets": 7})",
                {{"error", "must divide window_ms (1000) evenly"}, {"field", "limits.p.buckets"}}},
        BadBody{"BadMode",
                R"({"requests": 1, "window_ms": 1000, "mode": "log"})",
                {{"error", R"(must be one of "enforce", "shadow")"}, {"field", "limits.p.mode"}}},
        BadBody{"DuplicateKey",
                R"({"requests": 1, "requests": 500, "window_ms": 1000})",
                {{"error", "duplicate key"}, {"field", "limits.p.requests"}}}),
    [](const ::testing::TestParamInfo<BadBody>& param_info) {
      return std::string(param_info.param.name);
    });

TEST_F(AdminLimitsTest, AnInvalidPolicyNameIsRejected) {
  auto gateway = start();
  auto client = admin(*gateway);
  const auto reply =
      client.put("/admin/limits/no%20spaces", {{"requests", 1}, {"window_ms", 1000}});
  EXPECT_EQ(reply.status, 400U);
  EXPECT_EQ(reply.body["field"], R"(limits["no spaces"])");
  EXPECT_FALSE(client.get("/admin/limits").body.contains("no spaces"));
}

TEST_F(AdminLimitsTest, AnOverrideBodyIsValidatedToo) {
  auto gateway = start();
  auto client = admin(*gateway);
  const auto reply = client.put("/admin/limits/p/overrides/bob", {{"requests", -1}});
  EXPECT_EQ(reply.status, 400U);
  EXPECT_EQ(reply.body["field"], "overrides.p.bob.requests");
  EXPECT_EQ(client.get("/admin/limits/p/overrides/bob").status, 404U);
}

}  // namespace
}  // namespace sluice::testing
