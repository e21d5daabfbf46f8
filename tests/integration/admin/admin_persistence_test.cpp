// SPDX-License-Identifier: Apache-2.0
// admin.persist: accepted changes are written back to the config file atomically, keep what the
// operator did not change, survive a real restart, and never leave memory and disk disagreeing.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "tests/integration/admin/admin_fixture.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

class AdminPersistenceTest : public AdminFixture {
 protected:
  void SetUp() override {
    config["admin"]["persist"] = true;
    config["drain_timeout_ms"] = 1234;  // something no admin call touches
  }

  static std::string file_text(const SluiceProcess& gateway) {
    std::ifstream in(gateway.config_path());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
};

TEST_F(AdminPersistenceTest, ChangesSurviveARealRestart) {
  DemoBackend other;
  auto gateway = start();
  {
    auto client = admin(*gateway);
    ASSERT_EQ(client.put("/admin/limits/p", {{"requests", 2}, {"window_ms", 30000}}).status, 200U);
    ASSERT_EQ(client.put("/admin/limits/p/overrides/partner", {{"requests", 3}}).status, 200U);
    ASSERT_EQ(client.put("/admin/backends/demo/breaker", {{"k", 2.5}}).status, 200U);
    ASSERT_EQ(
        client.put("/admin/backends/demo/endpoints", {{"endpoints", {other.endpoint()}}}).status,
        200U);
    json table = {
        {"routes",
         json::array({{{"name", "api"}, {"prefix", "/"}, {"backend", "demo"}, {"limit", "p"}}})}};
    ASSERT_EQ(client.put("/admin/routes", table).status, 200U);
  }
  const json before_restart = admin(*gateway).get("/admin/config").body;
  gateway->restart();

  auto client = admin(*gateway);
  EXPECT_EQ(client.get("/admin/config").body, before_restart);
  EXPECT_EQ(client.get("/admin/limits/p").body["requests"], 2);
  EXPECT_EQ(client.get("/admin/limits/p/overrides/partner").body["requests"], 3);
  EXPECT_EQ(client.get("/admin/backends/demo/breaker").body["k"], 2.5);
  HttpClient proxy(gateway->proxy_port());
  const Response res = proxy.get("/ok", {{"X-API-Key", "alice"}});
  EXPECT_EQ(res["X-Backend-Port"], std::to_string(other.port()));
  EXPECT_EQ(res["RateLimit-Policy"], R"("p";q=2;w=30)");
  // Everything the operator wrote and no call changed is still there, in their order.
  const json file = gateway->read_config();
  EXPECT_EQ(file["drain_timeout_ms"], 1234);
  EXPECT_EQ(file["identity"], config["identity"]);
  EXPECT_FALSE(file["backends"]["demo"]["breaker"].contains("protection"));  // no defaults added
  EXPECT_EQ(file_text(*gateway).find(R"("access_log")"),
            file_text(*gateway).find("\"access_log\""));
}

TEST_F(AdminPersistenceTest, WritesTheFileOnlyForAcceptedChanges) {
  auto gateway = start();
  auto client = admin(*gateway);
  const std::string original = file_text(*gateway);
  EXPECT_EQ(client.put("/admin/limits/p", {{"requests", 0}, {"window_ms", 1000}}).status, 400U);
  EXPECT_EQ(client.del("/admin/limits/p").status, 409U);
  EXPECT_EQ(file_text(*gateway), original);
  ASSERT_EQ(client.put("/admin/limits/p", {{"requests", 9}, {"window_ms", 1000}}).status, 200U);
  EXPECT_EQ(gateway->read_config()["limits"]["p"], json({{"requests", 9}, {"window_ms", 1000}}));
}

TEST_F(AdminPersistenceTest, WithoutPersistTheFileIsNeverWritten) {
  config["admin"]["persist"] = false;
  auto gateway = start();
  const std::string original = file_text(*gateway);
  ASSERT_EQ(admin(*gateway).put("/admin/limits/p", {{"requests", 9}, {"window_ms", 1000}}).status,
            200U);
  EXPECT_EQ(file_text(*gateway), original);
}

TEST_F(AdminPersistenceTest, AFailedWriteReturns500AndChangesNothing) {
  auto gateway = start();
  auto client = admin(*gateway);
  HttpClient proxy(gateway->proxy_port());
  const json before = client.get("/admin/config").body;
  const std::string original = file_text(*gateway);
  ASSERT_EQ(::chmod(gateway->config_path().c_str(), 0444), 0);

  const auto reply = client.put("/admin/limits/p", {{"requests", 1}, {"window_ms", 60000}});
  EXPECT_EQ(reply.status, 500U);
  EXPECT_EQ(reply.body["error"], "persist_failed");
  EXPECT_NE(reply.body["detail"].get<std::string>().find("is read-only (mode 0444)"),
            std::string::npos)
      << reply.raw.body();
  EXPECT_EQ(client.get("/admin/config").body, before);
  EXPECT_EQ(file_text(*gateway), original);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(status_for(proxy, "alice"), 200U);  // still 5, not 1
  }
  EXPECT_TRUE(gateway->process().wait_for_line("admin change not applied"));

  ASSERT_EQ(::chmod(gateway->config_path().c_str(), 0644), 0);
  EXPECT_EQ(client.put("/admin/limits/p", {{"requests", 1}, {"window_ms", 60000}}).status, 200U);
  EXPECT_EQ(status_for(proxy, "alice"), 429U);
}

TEST_F(AdminPersistenceTest, NeverOverwritesAnEditMadeToTheFileByHand) {
  auto gateway = start();
  auto client = admin(*gateway);
  json edited = config;
  edited["limits"]["by-hand"] = {{"requests", 1}, {"window_ms", 1000}};
  gateway->rewrite_config(edited);
  const auto reply = client.put("/admin/limits/p", {{"requests", 1}, {"window_ms", 60000}});
  EXPECT_EQ(reply.status, 409U);
  EXPECT_EQ(reply.body["error"], "config_file_changed");
  EXPECT_TRUE(gateway->read_config()["limits"].contains("by-hand"));
  EXPECT_EQ(client.get("/admin/limits/p").body["requests"], 5);
  // Once reloaded, changes persist again, on top of the edit.
  const std::size_t mark = gateway->process().line_count();
  gateway->reload();
  ASSERT_TRUE(gateway->process().wait_for_line_after(mark, "reload ok"));
  EXPECT_EQ(client.put("/admin/limits/p", {{"requests", 1}, {"window_ms", 60000}}).status, 200U);
  EXPECT_TRUE(gateway->read_config()["limits"].contains("by-hand"));
  EXPECT_EQ(gateway->read_config()["limits"]["p"]["requests"], 1);
}

}  // namespace
}  // namespace sluice::testing
