// SPDX-License-Identifier: Apache-2.0
// Dry runs, config versions, rollback and audit lines (docs/operating.md "Dry runs", "Versions
// and rollback", "Audit lines") on the real binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "tests/integration/admin/admin_fixture.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

constexpr const char* kActor = "17a5ba082b3a";  // printf %s t0ken-for-tests | sha256sum

class VersionsTest : public AdminFixture {
 protected:
  void SetUp() override { config["admin"]["persist"] = true; }

  static std::string file_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  static std::filesystem::path history_file(const SluiceProcess& gateway) {
    return gateway.config_path().string() + ".history.json";
  }

  static std::string policy_header(SluiceProcess& gateway) {
    HttpClient proxy(gateway.proxy_port());
    return std::string(proxy.get("/ok", {{"X-API-Key", "probe"}})["RateLimit-Policy"]);
  }

  static json versions(AdminClient& client) {
    return client.get("/admin/config/versions").body["versions"];
  }

  static AdminClient::Reply post(AdminClient& client, std::string_view path, const json& body) {
    return client.send(http::verb::post, path, body.dump());
  }
};

TEST_F(VersionsTest, DryRunChangesNothingOnDiskOrInBehaviour) {
  DemoBackend other;
  auto gateway = start();
  auto client = admin(*gateway);
  const std::string config_bytes = file_text(gateway->config_path());
  const std::string history_bytes = file_text(history_file(*gateway));
  const json config_before = client.get("/admin/config").body;

  auto reply = client.put("/admin/limits/p?dry_run=true",
                          {{"requests", 1}, {"window_ms", 60000}, {"buckets", 10}});
  ASSERT_EQ(reply.status, 200U) << reply.raw.body();
  EXPECT_EQ(reply.body["dry_run"], true);
  EXPECT_EQ(reply.body["changes"],
            json::parse(R"([{"op":"replace","path":"limits.p.requests","from":5,"to":1}])"));
  // Every other mutating call, each a dry run.
  const json gold = {{"requests", 9}, {"window_ms", 1000}};
  EXPECT_EQ(client.put("/admin/limits/gold?dry_run=true", gold).body["changes"][0],
            json({{"op", "add"}, {"path", "limits.gold"}, {"to", gold}}));
  reply = client.put("/admin/limits/p/overrides/secret-user-key?dry_run=true", {{"requests", 3}});
  ASSERT_EQ(reply.status, 200U) << reply.raw.body();
  EXPECT_EQ(reply.raw.body().find("secret-user-key"), std::string::npos) << reply.raw.body();
  EXPECT_EQ(client.put("/admin/backends/demo/breaker?dry_run=true", {{"k", 3.0}}).status, 200U);
  EXPECT_EQ(
      client.put("/admin/backends/demo/endpoints?dry_run=true", {{"endpoints", {other.endpoint()}}})
          .body["changes"][0]["path"],
      "backends.demo.endpoints[0]");
  EXPECT_EQ(client
                .put("/admin/routes?dry_run=true",
                     {{"routes", {{{"name", "x"}, {"prefix", "/"}, {"backend", "demo"}}}}})
                .status,
            200U);
  reply = client.put("/admin/backends/demo/endpoints/" + backend.endpoint() + "/state?dry_run=true",
                     {{"state", "draining"}});
  ASSERT_EQ(reply.status, 200U) << reply.raw.body();
  EXPECT_EQ(reply.body["changes"][0]["to"], "draining");
  EXPECT_EQ(post(client, "/admin/config/rollback?dry_run=true", {{"version", 1}}).status, 200U);
  reply = client.send(http::verb::post, "/admin/tls/reload?dry_run=true", "");
  EXPECT_EQ(reply.status, 200U) << reply.raw.body();
  EXPECT_EQ(reply.body["changes"], json::array());

  EXPECT_EQ(file_text(gateway->config_path()), config_bytes);
  EXPECT_EQ(file_text(history_file(*gateway)), history_bytes);
  EXPECT_EQ(client.get("/admin/config").body, config_before);
  EXPECT_EQ(versions(client).size(), 1U);
  EXPECT_EQ(policy_header(*gateway), R"("p";q=5;w=60)");
  HttpClient proxy(gateway->proxy_port());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(status_for(proxy, "alice"), 200U);  // 5 allowed: the limit is still 5, not 1
  }
  EXPECT_EQ(status_for(proxy, "alice"), 429U);
  EXPECT_EQ(client.get("/admin/backends/demo/endpoints").body["endpoints"][0]["state"], "healthy");
}

TEST_F(VersionsTest, DryRunAnswersTheSameErrorsAsTheRealCall) {
  auto gateway = start();
  auto client = admin(*gateway);
  struct Case {
    http::verb method;
    std::string path;
    std::string body;
  };
  const std::vector<Case> cases{
      {http::verb::put, "/admin/limits/p", R"({"requests":0,"window_ms":1000})"},
      {http::verb::put, "/admin/limits/p", R"({"requests":)"},
      {http::verb::put, "/admin/limits/p", R"({"requests":5,"colour":"red"})"},
      {http::verb::delete_, "/admin/limits/p", ""},
      {http::verb::delete_, "/admin/limits/p/overrides/nobody", ""},
      {http::verb::put, "/admin/routes", R"({"routes":[{"name":"r","prefix":"/","backend":"x"}]})"},
      {http::verb::put, "/admin/backends/nope/breaker", R"({"k":2})"},
      {http::verb::put, "/admin/backends/demo/endpoints/" + backend.endpoint() + "/state",
       R"({"state":"sleepy"})"},
      {http::verb::post, "/admin/config/rollback", R"({"version":99})"},
      {http::verb::post, "/admin/config/rollback", R"({"version":"one"})"},
  };
  for (const Case& c : cases) {
    const auto dry = client.send(c.method, c.path + "?dry_run=true", c.body);
    const auto real = client.send(c.method, c.path, c.body);
    EXPECT_GE(real.status, 400U) << c.path << " " << c.body;
    EXPECT_EQ(dry.status, real.status) << c.path << " " << c.body;
    EXPECT_EQ(dry.raw.body(), real.raw.body()) << c.path << " " << c.body;
  }
  const auto bad = client.put("/admin/limits/p?dry_run=maybe", {{"requests", 1}});
  EXPECT_EQ(bad.status, 400U);
  EXPECT_EQ(bad.body["field"], "(query) dry_run");
  EXPECT_EQ(versions(client).size(), 1U);  // nothing above was applied
}

TEST_F(VersionsTest, EveryAdminChangeGetsAVersionWithItsActorAndAnAuditLine) {
  auto gateway = start();
  auto client = admin(*gateway);
  json list = versions(client);
  ASSERT_EQ(list.size(), 1U);
  EXPECT_EQ(list[0]["version"], 1);
  EXPECT_EQ(list[0]["source"], "start");
  EXPECT_TRUE(list[0]["actor"].is_null());
  EXPECT_EQ(list[0]["summary"], "initial config");

  ASSERT_EQ(client.put("/admin/limits/p", {{"requests", 2}, {"window_ms", 60000}, {"buckets", 10}})
                .status,
            200U);
  ASSERT_EQ(client.put("/admin/limits/p/overrides/secret-user-key", {{"requests", 3}}).status,
            200U);
  list = versions(client);
  ASSERT_EQ(list.size(), 3U);
  EXPECT_EQ(list[0]["version"], 3);  // newest first
  EXPECT_EQ(list[1]["version"], 2);
  EXPECT_EQ(list[1]["source"], "admin");
  EXPECT_EQ(list[1]["actor"], kActor);
  EXPECT_EQ(list[1]["summary"], "limits.p.requests 5 -> 2");
  EXPECT_EQ(list[0]["summary"], "overrides added");
  EXPECT_EQ(list.dump().find("secret-user-key"), std::string::npos) << list.dump();
  EXPECT_FALSE(list[0].contains("config"));

  const auto v2 = client.get("/admin/config/versions/2");
  ASSERT_EQ(v2.status, 200U);
  EXPECT_EQ(v2.body["config"]["limits"]["p"]["requests"], 2);
  EXPECT_EQ(v2.body["actor"], kActor);
  EXPECT_EQ(client.get("/admin/config/versions/9").status, 404U);
  EXPECT_EQ(client.get("/admin/config/versions/x").status, 404U);

  std::string line;
  ASSERT_TRUE(gateway->process().wait_for_line(R"("version":2)", kDefaultTimeout, &line))
      << gateway->process().output();
  const json audit = json::parse(line.substr(line.find('{')));
  EXPECT_EQ(audit["event"], "admin_change");
  EXPECT_EQ(audit["actor"], kActor);
  EXPECT_EQ(audit["method"], "PUT");
  EXPECT_EQ(audit["path"], "/admin/limits/p");
  EXPECT_EQ(audit["resource"], "limits");
  EXPECT_EQ(audit["changes"][0]["path"], "limits.p.requests");
  EXPECT_NE(audit["peer"].get<std::string>().find("127.0.0.1:"), std::string::npos);
  ASSERT_TRUE(gateway->process().wait_for_line(R"("version":3)"));
  EXPECT_EQ(gateway->process().output().find("secret-user-key"), std::string::npos);
}

TEST_F(VersionsTest, RollbackRestoresTheOldLimitAsANewVersion) {
  auto gateway = start();
  auto client = admin(*gateway);
  ASSERT_EQ(client.put("/admin/limits/p", {{"requests", 2}, {"window_ms", 30000}}).status, 200U);
  ASSERT_EQ(policy_header(*gateway), R"("p";q=2;w=30)");

  const auto reply = post(client, "/admin/config/rollback", {{"version", 1}});
  ASSERT_EQ(reply.status, 200U) << reply.raw.body();
  EXPECT_EQ(reply.body["version"], 3);
  EXPECT_EQ(reply.body["rolled_back_to"], 1);
  EXPECT_EQ(reply.body["needs_restart"], json::array());
  EXPECT_EQ(reply.body["changes"][0],
            json({{"op", "replace"}, {"path", "limits.p.requests"}, {"from", 2}, {"to", 5}}));
  EXPECT_EQ(policy_header(*gateway), R"("p";q=5;w=60)");
  EXPECT_EQ(gateway->read_config()["limits"]["p"]["requests"], 5);  // persisted like any change
  const json list = versions(client);
  EXPECT_EQ(list[0]["source"], "rollback");
  EXPECT_EQ(list[0]["actor"], kActor);
  EXPECT_EQ(post(client, "/admin/config/rollback", {{"version", 42}}).status, 404U);
  EXPECT_EQ(post(client, "/admin/config/rollback", {{"v", 1}}).status, 400U);
}

TEST_F(VersionsTest, AReloadGetsAVersionAndRollbackKeepsRestartOnlyFields) {
  auto gateway = start();
  auto client = admin(*gateway);
  json edited = gateway->read_config();
  edited["limits"]["p"]["requests"] = 7;
  edited["threads"] = 1;
  gateway->rewrite_config(edited);
  gateway->reload();
  ASSERT_TRUE(wait_until("the reload's version", [&] { return versions(client).size() == 2; }));
  const json reloaded = versions(client)[0];
  EXPECT_EQ(reloaded["source"], "reload");
  EXPECT_TRUE(reloaded["actor"].is_null());
  EXPECT_EQ(reloaded["summary"], "limits.p.requests 5 -> 7, +1 more");  // the file's key order
  EXPECT_EQ(policy_header(*gateway), R"("p";q=7;w=60)");

  const auto reply = post(client, "/admin/config/rollback", {{"version", 1}});
  ASSERT_EQ(reply.status, 200U) << reply.raw.body();
  EXPECT_EQ(reply.body["needs_restart"], json::array({"threads"}));
  EXPECT_EQ(client.get("/admin/config").body["threads"], 1);  // kept as it runs
  EXPECT_EQ(policy_header(*gateway), R"("p";q=5;w=60)");
}

TEST_F(VersionsTest, HistorySurvivesARestart) {
  auto gateway = start();
  {
    auto client = admin(*gateway);
    ASSERT_EQ(client.put("/admin/limits/p", {{"requests", 2}, {"window_ms", 30000}}).status, 200U);
  }
  gateway->restart();
  auto client = admin(*gateway);
  const json list = versions(client);
  ASSERT_EQ(list.size(), 3U) << list.dump();
  EXPECT_EQ(list[0]["version"], 3);
  EXPECT_EQ(list[0]["source"], "start");
  EXPECT_EQ(list[0]["summary"], "no change");
  EXPECT_EQ(list[1]["actor"], kActor);
  ASSERT_EQ(post(client, "/admin/config/rollback", {{"version", 1}}).status, 200U);
  EXPECT_EQ(policy_header(*gateway), R"("p";q=5;w=60)");
}

TEST_F(VersionsTest, WithoutPersistTheHistoryIsNotWritten) {
  config["admin"]["persist"] = false;
  auto gateway = start();
  auto client = admin(*gateway);
  ASSERT_EQ(client.put("/admin/limits/p", {{"requests", 2}, {"window_ms", 30000}}).status, 200U);
  EXPECT_EQ(versions(client).size(), 2U);
  EXPECT_FALSE(std::filesystem::exists(history_file(*gateway)));
}

TEST_F(VersionsTest, ACorruptHistoryFileIsMovedAsideAtStart) {
  auto gateway = start();
  std::ofstream(history_file(*gateway)) << "{\"format\":1,\"versions\":[";
  gateway->restart();
  EXPECT_TRUE(gateway->process().wait_for_line("moved to")) << gateway->process().output();
  auto client = admin(*gateway);
  const json list = versions(client);
  ASSERT_EQ(list.size(), 1U);
  EXPECT_EQ(list[0]["version"], 1);
  EXPECT_EQ(file_text(history_file(*gateway).string() + ".corrupt"),
            "{\"format\":1,\"versions\":[");
}

TEST_F(VersionsTest, ATlsReloadDryRunReadsTheFilesAndInstallsNothing) {
  TestPki pki;
  const TestPki::Issued api = pki.issue("api", "api-v1", {"api.example.test"});
  config.erase("listen");
  config["listeners"] =
      json::array({{{"name", "secure"},
                    {"address", "127.0.0.1"},
                    {"port", 0},
                    {"tls", {{"certificates", {{{"cert", api.cert}, {"key", api.key}}}}}}}});
  auto gateway = start();
  auto client = admin(*gateway);
  pki.issue("api", "api-v2", {"api.example.test"});  // new files at the same paths

  auto reply = client.send(http::verb::post, "/admin/tls/reload?dry_run=true", "");
  ASSERT_EQ(reply.status, 200U) << reply.raw.body();
  const json subject_change = {{"op", "replace"},
                               {"path", "listeners[0].certificates[0].subject"},
                               {"from", "/CN=api-v1"},
                               {"to", "/CN=api-v2"}};
  EXPECT_NE(std::find(reply.body["changes"].begin(), reply.body["changes"].end(), subject_change),
            reply.body["changes"].end())
      << reply.raw.body();
  EXPECT_EQ(client.get("/admin/tls").body["listeners"][0]["certificates"][0]["subject"],
            "/CN=api-v1");

  { std::ofstream(api.key, std::ios::trunc) << "not a key\n"; }
  const auto dry = client.send(http::verb::post, "/admin/tls/reload?dry_run=true", "");
  const auto real = client.send(http::verb::post, "/admin/tls/reload", "");
  EXPECT_EQ(dry.status, 500U);
  EXPECT_EQ(dry.raw.body(), real.raw.body());
}

}  // namespace
}  // namespace sluice::testing
