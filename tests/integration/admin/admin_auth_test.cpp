// SPDX-License-Identifier: Apache-2.0
// The admin listener's front door: bearer auth, the loopback rule, body caps, unknown paths,
// and the audit trail (metrics and log) of every accepted change.
#include <gtest/gtest.h>

#include "tests/integration/admin/admin_fixture.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/raw_peer.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

class AdminAuthTest : public AdminFixture {};

TEST_F(AdminAuthTest, EveryAdminPathNeedsTheBearerToken) {
  auto gateway = start();
  AdminClient anonymous(gateway->admin_port());
  AdminClient wrong(gateway->admin_port(), std::string("not-the-token"));
  for (const char* path : {"/admin/config", "/admin/limits", "/admin/backends", "/admin/routes",
                           "/admin/limits/p/keys/alice", "/admin/nothing-here"}) {
    for (AdminClient* client : {&anonymous, &wrong}) {
      const auto reply = client->get(path);
      EXPECT_EQ(reply.status, 401U) << path;
      EXPECT_EQ(reply.body, json({{"error", "unauthorized"}})) << path;
      EXPECT_EQ(reply.raw[http::field::www_authenticate], R"(Bearer realm="sluice-admin")");
    }
  }
  // A change without the token changes nothing.
  EXPECT_EQ(wrong.put("/admin/limits/p", {{"requests", 1}, {"window_ms", 1000}}).status, 401U);
  // 13 refusals in well under a second: logged about once a second, not 13 times.
  EXPECT_TRUE(gateway->process().wait_for_line("admin unauthorized peer=127.0.0.1:"));
  EXPECT_LE(gateway->process().count_lines("admin unauthorized"), 3U);
  auto authorized = admin(*gateway);
  EXPECT_EQ(authorized.get("/admin/limits").body["p"]["requests"], 5);
  // The probes and the scrape stay open.
  EXPECT_EQ(anonymous.get("/healthz").status, 200U);
  EXPECT_EQ(anonymous.get("/readyz").status, 200U);
  EXPECT_EQ(anonymous.get("/metrics").status, 200U);
}

TEST_F(AdminAuthTest, WithoutATokenTheApiIsOpenOnLoopbackAndSaysSo) {
  config["admin"]["token_env"] = nullptr;
  SluiceProcess gateway(config);
  AdminClient anonymous(gateway.admin_port());
  EXPECT_EQ(anonymous.get("/admin/limits").status, 200U);
  EXPECT_TRUE(gateway.process().wait_for_line("the admin API is open (no token)"));
}

TEST_F(AdminAuthTest, RefusesToExposeAnOpenAdminApiBeyondLoopback) {
  // token_env is set but the variable is not: no token, and 0.0.0.0 is not loopback. The
  // refusal comes before anything is bound, so a proxy port already taken is not what fails.
  const RawPeer taken(RawPeer::Mode::kRefuse);
  config["listen"] = {{"address", "127.0.0.1"}, {"port", taken.port()}};
  config["admin"]["address"] = "0.0.0.0";
  SluiceProcess::Options options;
  options.wait_ready = false;
  SluiceProcess gateway(config, options);
  EXPECT_EQ(gateway.process().wait_exit(), 1);
  EXPECT_NE(gateway.process().output().find(
                "refusing to start: admin.address=0.0.0.0 is not loopback and no admin token is "
                "set (set the environment variable SLUICE_TEST_ADMIN_TOKEN)"),
            std::string::npos)
      << gateway.process().output();
  EXPECT_EQ(gateway.process().count_lines("ready proxy="), 0U);
  EXPECT_EQ(gateway.process().count_lines("cannot listen"), 0U) << gateway.process().output();
}

TEST_F(AdminAuthTest, EveryReasonToRefuseTheStartIsReportedNotJustTheLast) {
  // An unset user-hash key and an open admin API beyond loopback: both are named (the second
  // used to replace the first).
  config["admin"]["address"] = "0.0.0.0";
  config["access_log"] = {{"user_hash_key_env", "SLUICE_TEST_UNSET_USER_KEY"}};
  SluiceProcess::Options options;
  options.wait_ready = false;
  SluiceProcess gateway(config, options);
  EXPECT_EQ(gateway.process().wait_exit(), 1);
  const std::string output = gateway.process().output();
  EXPECT_NE(output.find("SLUICE_TEST_UNSET_USER_KEY"), std::string::npos) << output;
  EXPECT_NE(output.find("admin.address=0.0.0.0 is not loopback"), std::string::npos) << output;
}

TEST_F(AdminAuthTest, WithTheTokenSetItMayListenOnAnyAddress) {
  config["admin"]["address"] = "0.0.0.0";
  auto gateway = start();
  EXPECT_EQ(admin(*gateway).get("/admin/limits").status, 200U);
}

TEST_F(AdminAuthTest, BodiesOverOneMebibyteAre413AndChangeNothing) {
  auto gateway = start();
  auto client = admin(*gateway);
  const std::string huge = R"({"requests": 1, "window_ms": 1000, "pad": ")" +
                           std::string(std::size_t{1024} * 1024, 'x') + "\"}";
  AdminClient big(gateway->admin_port(), std::string(kAdminToken));
  EXPECT_EQ(big.put_text("/admin/limits/p", huge).status, 413U);
  EXPECT_EQ(client.get("/admin/limits/p").body["requests"], 5);
}

TEST_F(AdminAuthTest, UnknownPathsAre404AndWrongMethods405WithAllow) {
  auto gateway = start();
  auto client = admin(*gateway);
  EXPECT_EQ(client.get("/admin/nothing").status, 404U);
  EXPECT_EQ(client.get("/admin/limits/p/extra").status, 404U);
  EXPECT_EQ(client.get("/admin/limits/nope").status, 404U);
  EXPECT_EQ(client.get("/admin/backends/nope/breaker").status, 404U);
  EXPECT_EQ(client.get("/admin/limits/p/%zz").status, 400U);
  // A key that is not UTF-8 could never be written back as JSON: refused up front.
  EXPECT_EQ(client.put("/admin/limits/p/overrides/%FF", {{"requests", 1}}).status, 400U);
  EXPECT_EQ(client.get("/admin/limits/p/keys/%C0%AF").status, 400U);
  EXPECT_EQ(client.get("/admin/config").status, 200U);
  const auto post = client.send(http::verb::post, "/admin/config", "{}");
  EXPECT_EQ(post.status, 405U);
  EXPECT_EQ(post.raw[http::field::allow], "GET");
  EXPECT_EQ(client.send(http::verb::post, "/admin/routes", "{}").raw[http::field::allow],
            "GET, PUT");
  EXPECT_EQ(client.del("/admin/limits/p/keys/alice").status, 405U);
}

TEST_F(AdminAuthTest, EveryAcceptedChangeIsCountedAndLoggedWithWhoAndWhat) {
  auto gateway = start();
  auto client = admin(*gateway);
  const auto changes = [&](const char* resource) {
    return metric_value(*gateway, "sluice_admin_changes_total", {{"resource", resource}});
  };
  for (const char* resource : {"limits", "overrides", "breaker", "endpoints", "routes"}) {
    EXPECT_EQ(changes(resource), 0) << resource;  // every series exists from the start
  }
  const std::size_t mark = gateway->process().line_count();
  ASSERT_EQ(client.put("/admin/limits/p", {{"requests", 7}, {"window_ms", 60000}, {"buckets", 10}})
                .status,
            200U);
  ASSERT_EQ(client.put("/admin/limits/p/overrides/sk-live-secret", {{"requests", 50}}).status,
            200U);
  EXPECT_EQ(client.put("/admin/limits/p", {{"requests", 0}, {"window_ms", 60000}}).status, 400U);
  EXPECT_EQ(changes("limits"), 1);
  EXPECT_EQ(changes("overrides"), 1);
  std::string line;
  ASSERT_TRUE(
      gateway->process().wait_for_line_after(mark, "resource=limits", kDefaultTimeout, &line));
  EXPECT_NE(line.find("admin change peer=127.0.0.1:"), std::string::npos) << line;
  EXPECT_NE(line.find(R"([{"op":"replace","path":"/requests","value":7}])"), std::string::npos)
      << line;
  ASSERT_TRUE(gateway->process().wait_for_line_after(mark, "resource=overrides"));
  ASSERT_TRUE(gateway->process().wait_for_line_after(mark, "admin change rejected"));
  // The override key is the operator's, but a log is no place for a credential in clear.
  EXPECT_EQ(gateway->process().output().find("sk-live-secret"), std::string::npos);
}

}  // namespace
}  // namespace sluice::testing
