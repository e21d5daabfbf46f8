// SPDX-License-Identifier: Apache-2.0
// Client certificates through the real binary (docs/tls.md "Client certificates"): a listener
// that requires one refuses handshakes without a valid one, and the certificate's name keys
// the partner's rate limit.
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/proxy/proxy_fixture.hpp"
#include "tests/support/test_pki.hpp"
#include "tests/support/tls_client.hpp"
#include "tests/support/tls_command_line.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;

class ClientCertTest : public ::testing::Test, protected ProxyFixtureBase {
 protected:
  TestPki pki;
  TestPki partners;  // the CA partners' certificates come from
  TestPki::Issued server = pki.issue("server", "server", {"api.example.test"});
  TestPki::Issued partner_a =
      partners.issue("a", "partner-a", {"a.partners.test", "URI:spiffe://partners/a"});
  TestPki::Issued partner_b = partners.issue("b", "partner-b", {"b.partners.test"});

  ClientCertTest() {
    config.erase("listen");
    config["listeners"] = json::array({
        {{"name", "partners"},
         {"address", "127.0.0.1"},
         {"port", 0},
         {"tls",
          {{"certificates", {{{"cert", server.cert}, {"key", server.key}}}},
           {"client_ca", partners.ca_cert()},
           {"require_client_cert", true}}}},
    });
    config["identity"] = {{{"client_cert", "subject_cn"}}, {{"client_ip", true}}};
    config["limits"] = {{"partner", {{"requests", 2}, {"window_ms", 60000}, {"buckets", 60}}}};
    config["routes"][0]["limit"] = "partner";
  }

  TlsClient::Options as(const TestPki::Issued& who) const {
    return {"api.example.test", pki.ca_cert(), who.cert, who.key};
  }
};

TEST_F(ClientCertTest, TheCertificatesNameKeysThePartnersLimit) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("partners");
  TlsClient a(port, as(partner_a));
  EXPECT_EQ(a.get("/ok").result_int(), 200);
  EXPECT_EQ(a.get("/ok").result_int(), 200);
  EXPECT_EQ(a.get("/ok").result_int(), 429) << "partner-a spent its 2 requests";
  // Another connection of the same partner shares the key; another partner has its own.
  EXPECT_EQ(TlsClient(port, as(partner_a)).get("/ok").result_int(), 429);
  TlsClient b(port, as(partner_b));
  EXPECT_EQ(b.get("/ok").result_int(), 200);
  // curl with the certificate gets through the same way.
  const ProcessResult r = curl_https(port, "api.example.test", pki.ca_cert(), "/ok",
                                     {"--cert", partner_b.cert, "--key", partner_b.key});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.ends_with("\n200 1.1")) << r.out;
}

TEST_F(ClientCertTest, NoCertificateOrAnotherCasIsRefusedAtTheHandshake) {
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("partners");
  TestPki::Issued stranger =
      pki.issue("stranger", "stranger", {});  // the server's CA, not partners'
  EXPECT_FALSE(tls_get_works(port, {"api.example.test", pki.ca_cert()}));
  EXPECT_FALSE(tls_get_works(port, as(stranger)));
  EXPECT_TRUE(tls_get_works(port, as(partner_a)));
  const ProcessResult r = curl_https(port, "api.example.test", pki.ca_cert(), "/ok");
  EXPECT_NE(r.exit_code, 0) << r.out;
}

TEST_F(ClientCertTest, AnOptionalCertificateKeysWhenGivenElseTheNextSource) {
  config["listeners"][0]["tls"]["require_client_cert"] = false;
  config["identity"] = {
      {{"client_cert", "san_uri"}}, {{"header", "X-API-Key"}}, {{"client_ip", true}}};
  SluiceProcess gateway(config);
  const std::uint16_t port = gateway.listener_port("partners");
  TlsClient anonymous(port, {"api.example.test", pki.ca_cert()});
  EXPECT_EQ(anonymous.get("/ok", {{"X-API-Key", "k"}}).result_int(), 200);
  EXPECT_EQ(anonymous.get("/ok", {{"X-API-Key", "k"}}).result_int(), 200);
  EXPECT_EQ(anonymous.get("/ok", {{"X-API-Key", "k"}}).result_int(), 429);
  // Partner a's URI is its key, whatever header it sends.
  TlsClient a(port, as(partner_a));
  EXPECT_EQ(a.get("/ok", {{"X-API-Key", "k"}}).result_int(), 200);
  // Partner b's certificate has no URI: the header keys it, and "k" is spent.
  TlsClient b(port, as(partner_b));
  EXPECT_EQ(b.get("/ok", {{"X-API-Key", "k"}}).result_int(), 429);
}

}  // namespace
}  // namespace sluice::testing
