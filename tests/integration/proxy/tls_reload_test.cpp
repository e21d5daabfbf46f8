// SPDX-License-Identifier: Apache-2.0
// Certificate reload through the real binary (docs/tls.md "Rotating certificates"): SIGHUP and
// POST /admin/tls/reload serve new files to new connections while open ones keep theirs; a bad
// file keeps every old certificate, is logged and counted; the expiry gauge follows.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/admin_client.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tls_client.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

class TlsReloadTest : public ::testing::Test, protected ProxyFixtureBase {
 protected:
  TestPki pki;
  TestPki::Issued api =
      pki.issue("api", "api-v1", {"api.example.test"}, TestPki::Key::kEcdsaP256, 30);

  TlsReloadTest() {
    config.erase("listen");
    config["listeners"] = json::array({
        {{"name", "secure"},
         {"address", "127.0.0.1"},
         {"port", 0},
         {"tls", {{"certificates", {{{"cert", api.cert}, {"key", api.key}}}}}}},
    });
  }

  TlsClient::Options client() const { return {"api.example.test", pki.ca_cert()}; }

  /// The subject a new connection is served.
  std::string served_subject(const SluiceProcess& gateway) const {
    return TlsClient(const_cast<SluiceProcess&>(gateway).listener_port("secure"), client())
        .peer_subject();
  }

  static double expiry(SluiceProcess& gateway) {
    return scrape_metrics(gateway).value("sluice_tls_certificate_expiry_timestamp_seconds",
                                         {{"listener", "secure"}, {"certificate", "0"}});
  }
  static double reloads(SluiceProcess& gateway, const std::string& result) {
    return scrape_metrics(gateway).value("sluice_config_reloads_total", {{"result", result}});
  }
};

TEST_F(TlsReloadTest, SighupServesNewFilesToNewConnectionsAndOpenOnesKeepTheirs) {
  SluiceProcess gateway(config);
  TlsClient open_connection(gateway.listener_port("secure"), client());
  ASSERT_EQ(open_connection.get("/ok").result_int(), 200);
  const std::string old_serial = open_connection.peer_serial();
  const double old_expiry = expiry(gateway);
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  EXPECT_NEAR(old_expiry, static_cast<double>(now + 30 * 86400), 120);

  // Rotation as certbot does it: new files at the same paths, then a signal.
  pki.issue("api", "api-v2", {"api.example.test"}, TestPki::Key::kRsa2048, 60);
  gateway.reload();
  ASSERT_TRUE(wait_until("the new certificate is served",
                         [&] { return served_subject(gateway) == "/CN=api-v2"; }));
  TlsClient fresh(gateway.listener_port("secure"), client());
  EXPECT_NE(fresh.peer_serial(), old_serial);
  EXPECT_NEAR(expiry(gateway), static_cast<double>(now + 60 * 86400), 120);
  EXPECT_EQ(reloads(gateway, "ok"), 1);
  // The connection opened before the reload is untouched: same session, still served.
  EXPECT_EQ(open_connection.peer_subject(), "/CN=api-v1");
  EXPECT_EQ(open_connection.get("/ok").result_int(), 200);
  EXPECT_TRUE(gateway.process().wait_for_line("tls reload ok certificates=1"))
      << gateway.process().output();
}

TEST_F(TlsReloadTest, ABadFileOnReloadKeepsTheOldCertificatesAndIsCounted) {
  SluiceProcess gateway(config);
  AdminClient admin(gateway.admin_port());
  const double old_expiry = expiry(gateway);
  { std::ofstream(api.key, std::ios::trunc) << "not a key\n"; }
  const AdminClient::Reply failed = admin.post("/admin/tls/reload");
  EXPECT_EQ(failed.status, 500);
  EXPECT_EQ(failed.body["error"], "tls_reload_failed");
  EXPECT_TRUE(failed.body["detail"].get<std::string>().starts_with(
      "listeners[0].tls.certificates[0].key: cannot load " + api.key))
      << failed.body.dump();
  EXPECT_EQ(failed.body["listeners"][0]["certificates"][0]["subject"], "/CN=api-v1");
  EXPECT_EQ(reloads(gateway, "error"), 1);
  EXPECT_EQ(expiry(gateway), old_expiry);
  EXPECT_EQ(served_subject(gateway), "/CN=api-v1") << "the old certificate is still served";
  gateway.reload();  // SIGHUP with the bad file: the same, counted once more
  ASSERT_TRUE(
      wait_until("the SIGHUP reload is counted", [&] { return reloads(gateway, "error") == 2; }));
  EXPECT_TRUE(gateway.process().wait_for_line("tls reload failed")) << gateway.process().output();

  pki.issue("api", "api-v3", {"api.example.test"});  // fixed
  const AdminClient::Reply fixed = admin.post("/admin/tls/reload");
  EXPECT_EQ(fixed.status, 200) << fixed.body.dump();
  EXPECT_EQ(fixed.body["listeners"][0]["name"], "secure");
  EXPECT_EQ(fixed.body["listeners"][0]["certificates"][0]["subject"], "/CN=api-v3");
  EXPECT_EQ(fixed.body["listeners"][0]["certificates"][0]["names"],
            json::array({"api.example.test"}));
  EXPECT_EQ(served_subject(gateway), "/CN=api-v3");
  EXPECT_EQ(admin.get("/admin/tls").body, fixed.body);
  EXPECT_EQ(admin.get("/admin/tls/reload").status, 405);
}

}  // namespace
}  // namespace sluice::testing
