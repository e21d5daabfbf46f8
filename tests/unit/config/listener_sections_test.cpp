// SPDX-License-Identifier: Apache-2.0
// Validation of the `listeners` section (listener_sections.cpp): names, TLS, redirects, the
// PROXY protocol and what they need of the rest of the config.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gateway/config/config_json.hpp"
#include "gateway/config/listener_config.hpp"
#include "tests/unit/config/config_test_support.hpp"

namespace sluice::config {
namespace {

using test_support::parsed;
using test_support::problems_of;
using test_support::valid_document;
using ::testing::ElementsAre;
using Json = nlohmann::json;

TEST(ListenerSectionsTest, ListenersAreNamedAndListenedOnInOrder) {
  auto doc = valid_document();
  doc.erase("listen");
  doc["listeners"] = {{{"name", "public"}, {"address", "0.0.0.0"}, {"port", 8080}},
                      {{"name", "internal-2"}, {"address", "127.0.0.1"}, {"port", 0}}};
  const auto config = parsed(doc);
  ASSERT_EQ(config.listeners.size(), 2U);
  EXPECT_EQ(config.listeners[0].name, "public");
  EXPECT_EQ(config.listeners[1].name, "internal-2");
  EXPECT_EQ(config.listeners[1].address, "127.0.0.1");
  EXPECT_EQ(config.listeners[1].port, 0);
}

TEST(ListenerSectionsTest, ATlsListenerNamesItsCertificatesAndPolicy) {
  auto doc = valid_document();
  doc.erase("listen");
  doc["listeners"] = {{{"name", "https"},
                       {"port", 8443},
                       {"tls",
                        {{"certificates",
                          {{{"cert", "/etc/sluice/a.pem"}, {"key", "/etc/sluice/a.key"}},
                           {{"cert", "/etc/sluice/b.pem"},
                            {"key", "/etc/sluice/b.key"},
                            {"server_names", {"*.example.com"}}}}},
                         {"min_version", "1.3"},
                         {"alpn", {"h2", "http/1.1"}}}}}};
  const auto config = parsed(doc);
  ASSERT_TRUE(config.listeners[0].tls);
  const auto& tls = *config.listeners[0].tls;
  ASSERT_EQ(tls.certificates.size(), 2U);
  EXPECT_EQ(tls.certificates[1].server_names, std::vector<std::string>{"*.example.com"});
  EXPECT_EQ(tls.min_version, "1.3");
  EXPECT_EQ(tls.alpn, (std::vector<std::string>{"h2", "http/1.1"}));
  doc["listeners"][0]["tls"] = {
      {"certificates", Json::array()}, {"min_version", "1.1"}, {"alpn", {"spdy/3"}}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("listeners[0].tls.certificates: must name at least one certificate",
                          "listeners[0].tls.min_version: must be \"1.2\" or \"1.3\" (older "
                          "versions are refused)",
                          "listeners[0].tls.alpn[0]: must be \"http/1.1\" or \"h2\""));
  doc["listeners"][0]["tls"] = {{"certificates", {{{"cert", "/a.pem"}}}}};
  EXPECT_THAT(problems_of(doc), ElementsAre("listeners[0].tls.certificates[0].key: is required"));
}

TEST(ListenerSectionsTest, ClientCertificatesNeedAClientCaAndKeyTheClientCertIdentity) {
  auto doc = valid_document();
  doc.erase("listen");
  Json tls = {{"certificates", {{{"cert", "/a.pem"}, {"key", "/a.key"}}}},
              {"client_ca", "/partners-ca.pem"},
              {"require_client_cert", true}};
  doc["listeners"] = {{{"name", "partners"}, {"port", 8443}, {"tls", tls}}};
  doc["identity"] = {{{"client_cert", "san_uri"}}, {{"client_ip", true}}};
  const auto config = parsed(doc);
  EXPECT_EQ(config.listeners[0].tls->client_ca, "/partners-ca.pem");
  EXPECT_TRUE(config.listeners[0].tls->require_client_cert);
  EXPECT_EQ(config.identity[0].kind, config::IdentitySource::Kind::kClientCert);
  EXPECT_EQ(config.identity[0].cert_name, config::IdentitySource::CertName::kSanUri);
  EXPECT_EQ(config::to_json(config)["identity"][0], (Json{{"client_cert", "san_uri"}}));
  EXPECT_EQ(config::to_json(config)["listeners"][0]["tls"]["client_ca"], "/partners-ca.pem");

  doc["identity"] = {{{"client_cert", "email"}}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre(R"(identity[0].client_cert: must be one of "subject_cn", "san_dns", )"
                          R"("san_uri")"));
  doc["identity"] = {{{"client_cert", "subject_cn"}}};
  doc["listeners"][0]["tls"].erase("client_ca");
  EXPECT_THAT(problems_of(doc),
              ElementsAre("listeners[0].tls.require_client_cert: needs client_ca to verify the "
                          "certificates against",
                          "identity[0].client_cert: needs a listener whose tls has a client_ca"));
}

TEST(ListenerSectionsTest, RedirectToHttpsNeedsATlsListenerAndAPlainOne) {
  auto doc = valid_document();
  doc.erase("listen");
  const Json tls = {{"certificates", {{{"cert", "/a.pem"}, {"key", "/a.key"}}}}};
  doc["listeners"] = {{{"name", "http"}, {"redirect_to_https", true}},
                      {{"name", "https"}, {"port", 8443}, {"tls", tls}}};
  EXPECT_TRUE(parsed(doc).listeners[0].redirect_to_https);
  doc["listeners"][1]["redirect_to_https"] = true;
  EXPECT_THAT(problems_of(doc),
              ElementsAre("listeners[1].redirect_to_https: is for a plain listener (this one has "
                          "tls)"));
  doc["listeners"] = {{{"name", "http"}, {"redirect_to_https", true}}};
  EXPECT_THAT(problems_of(doc), ElementsAre("listeners[0].redirect_to_https: needs a listener "
                                            "with tls to redirect to"));
}

TEST(ListenerSectionsTest, ListenersNeedUniqueLabelNamesAndExcludeListen) {
  auto doc = valid_document();
  doc["listen"] = {{"port", 1}};
  doc["listeners"] = {{{"name", "a"}}, {{"name", "a"}}, {{"name", "b c"}}, {{"port", 2}}, 7};
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre("listeners: give either listen (v1) or listeners, not both",
                  "listeners[1].name: is used by another listener",
                  "listeners[2].name: must be letters, digits, - and _ (it is a metric label)",
                  "listeners[3].name: is required", "listeners[4]: must be an object"));
  doc.erase("listen");
  doc["listeners"] = Json::array();
  EXPECT_THAT(problems_of(doc), ElementsAre("listeners: must name at least one listener"));
}

TEST(ListenerSectionsTest, ProxyProtocolNeedsTrustedProxies) {
  auto doc = valid_document();
  doc.erase("listen");
  doc["listeners"] = {{{"name", "edge"}, {"proxy_protocol", true}}};
  EXPECT_THAT(problems_of(doc),
              ElementsAre("listeners[0].proxy_protocol: needs http.trusted_proxies (the "
                          "balancers allowed to send the header)"));
  doc["http"] = {{"trusted_proxies", {"10.0.0.0/8"}}};
  EXPECT_TRUE(parsed(doc).listeners[0].proxy_protocol);
  doc["listeners"][0]["proxy_protocol"] = "v2";
  EXPECT_THAT(problems_of(doc), ElementsAre("listeners[0].proxy_protocol: must be a boolean"));
}

TEST(ListenerSectionsTest, Http2IsOffPlainAndFollowsAlpnOnTls) {
  auto doc = valid_document();
  doc.erase("listen");
  const Json tls = {{"certificates", {{{"cert", "/c.pem"}, {"key", "/c.key"}}}},
                    {"alpn", {"h2", "http/1.1"}}};
  doc["listeners"] = {{{"name", "plain"}},
                      {{"name", "h2c"}, {"http2", {{"enabled", true}}}},
                      {{"name", "h2"}, {"tls", tls}},
                      {{"name", "h1only"}, {"tls", {{"certificates", tls["certificates"]}}}}};
  const auto config = parsed(doc);
  EXPECT_FALSE(config.listeners[0].http2.enabled);
  EXPECT_TRUE(config.listeners[1].http2.enabled);
  EXPECT_TRUE(config.listeners[2].http2.enabled);
  EXPECT_FALSE(config.listeners[3].http2.enabled);
  EXPECT_EQ(config.listeners[2].http2.max_concurrent_streams, 128U);
  EXPECT_EQ(config.listeners[2].http2.max_stream_resets, 200U);
  EXPECT_EQ(config::to_json(config)["listeners"][1]["http2"]["enabled"], true);
}

TEST(ListenerSectionsTest, Http2LimitsAreBoundedAndEnabledMustAgreeWithAlpn) {
  auto doc = valid_document();
  doc.erase("listen");
  const Json certificates = {{{"cert", "/c.pem"}, {"key", "/c.key"}}};
  doc["listeners"] = {
      {{"name", "a"},
       {"http2", {{"enabled", true}, {"max_concurrent_streams", 0}, {"max_stream_resets", 0}}}},
      {{"name", "b"}, {"tls", {{"certificates", certificates}}}, {"http2", {{"enabled", true}}}},
      {{"name", "c"},
       {"tls", {{"certificates", certificates}, {"alpn", {"h2"}}}},
       {"http2", {{"enabled", false}}}}};
  EXPECT_THAT(
      problems_of(doc),
      ElementsAre("listeners[0].http2.max_concurrent_streams: must be between 1 and 10000",
                  "listeners[0].http2.max_stream_resets: must be between 1 and 1000000",
                  R"(listeners[1].http2.enabled: needs "h2" in tls.alpn on a TLS listener)",
                  R"(listeners[2].http2.enabled: contradicts "h2" in tls.alpn (remove one))"));
  doc["listeners"] = {
      {{"name", "a"},
       {"http2", {{"enabled", true}, {"max_concurrent_streams", 16}, {"max_stream_resets", 5}}}}};
  const auto config = parsed(doc);
  EXPECT_EQ(config.listeners[0].http2.max_concurrent_streams, 16U);
  EXPECT_EQ(config.listeners[0].http2.max_stream_resets, 5U);
}

}  // namespace
}  // namespace sluice::config
