// SPDX-License-Identifier: Apache-2.0
// The operator's TLS profile (docs/tls.md, "Operator's profile"): the default suites and groups,
// unknown names refused naming their field, the client's preference, an ECDSA and an RSA
// certificate for the same names, ALPN with nothing in common.
#include "gateway/tls/tls_policy.hpp"

#include <gtest/gtest.h>

#include "tests/unit/tls/memory_handshake.hpp"

namespace sluice::tls {
namespace {

using namespace memory_handshake;  // NOLINT(google-build-using-namespace)

class TlsPolicyTest : public MemoryHandshakeTest {
 protected:
  /// A client limited to `ciphers` (TLS 1.2 list; "" leaves the default) on TLS `version`.
  static Ctx limited_client(int version, const std::string& ciphers = "",
                            const std::string& suites = "", const std::string& groups = "",
                            const std::string& sigalgs = "") {
    Ctx ctx = client();
    SSL_CTX_set_min_proto_version(ctx.get(), version);
    SSL_CTX_set_max_proto_version(ctx.get(), version);
    if (!ciphers.empty()) {
      EXPECT_EQ(SSL_CTX_set_cipher_list(ctx.get(), ciphers.c_str()), 1) << ciphers;
    }
    if (!suites.empty()) {
      EXPECT_EQ(SSL_CTX_set_ciphersuites(ctx.get(), suites.c_str()), 1) << suites;
    }
    if (!groups.empty()) {
      EXPECT_EQ(SSL_CTX_set1_groups_list(ctx.get(), groups.c_str()), 1) << groups;
    }
    if (!sigalgs.empty()) {
      EXPECT_EQ(SSL_CTX_set1_sigalgs_list(ctx.get(), sigalgs.c_str()), 1) << sigalgs;
    }
    return ctx;
  }

  /// ECDSA then RSA, both for server.test.
  void dual_certificates() {
    config_.certificates = {
        cert_config(pki.issue("ecdsa", "ecdsa", {"server.test"})),
        cert_config(pki.issue("rsa", "rsa", {"server.test"}, TestPki::Key::kRsa2048))};
  }

  std::string load_error() {
    std::string error;
    EXPECT_FALSE(ServerTls::load(config_, "listeners[1].tls", keys_, error));
    return error;
  }
};

TEST_F(TlsPolicyTest, TheDefaultsOfferForwardSecretAeadSuitesAndStrongGroupsOnly) {
  dual_certificates();
  const auto served = serve();
  for (const char* weak : {"AES128-SHA", "AES128-GCM-SHA256", "ECDHE-ECDSA-AES128-SHA",
                           "ECDHE-RSA-AES256-SHA384", "DHE-RSA-AES128-GCM-SHA256"}) {
    EXPECT_FALSE(connect(*served, limited_client(TLS1_2_VERSION, weak).get()).ok) << weak;
  }
  for (const char* group : {"P-521", "X448", "ffdhe2048"}) {
    EXPECT_FALSE(connect(*served, limited_client(TLS1_3_VERSION, "", "", group).get()).ok) << group;
  }
  for (const char* group : {"X25519", "P-256", "P-384"}) {
    EXPECT_TRUE(connect(*served, limited_client(TLS1_3_VERSION, "", "", group).get()).ok) << group;
    EXPECT_TRUE(connect(*served, limited_client(TLS1_2_VERSION, "", "", group).get()).ok) << group;
  }
  for (const char* strong : {"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384",
                             "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"}) {
    const Result r = connect(*served, limited_client(TLS1_2_VERSION, strong).get());
    EXPECT_TRUE(r.ok) << strong;
    EXPECT_EQ(r.cipher, strong);
  }
}

TEST_F(TlsPolicyTest, TheClientsPreferenceIsHonoured) {
  const auto served = serve();
  Result r = connect(*served, limited_client(TLS1_2_VERSION,
                                             "ECDHE-ECDSA-CHACHA20-POLY1305:"
                                             "ECDHE-ECDSA-AES256-GCM-SHA384")
                                  .get());
  EXPECT_EQ(r.cipher, "ECDHE-ECDSA-CHACHA20-POLY1305");
  r = connect(*served, limited_client(TLS1_3_VERSION, "",
                                      "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384")
                           .get());
  EXPECT_EQ(r.cipher, "TLS_CHACHA20_POLY1305_SHA256");
  r = connect(*served, limited_client(TLS1_3_VERSION, "",
                                      "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256")
                           .get());
  EXPECT_EQ(r.cipher, "TLS_AES_128_GCM_SHA256");
}

TEST_F(TlsPolicyTest, TheOperatorsListsReplaceTheDefaults) {
  config_.ciphers = "ECDHE-ECDSA-AES256-GCM-SHA384:!aNULL:@STRENGTH";
  config_.ciphersuites = "TLS_AES_256_GCM_SHA384";
  config_.groups = "P-384:X25519";
  const auto served = serve();
  EXPECT_FALSE(
      connect(*served, limited_client(TLS1_2_VERSION, "ECDHE-ECDSA-AES128-GCM-SHA256").get()).ok);
  EXPECT_EQ(connect(*served, limited_client(TLS1_2_VERSION).get()).cipher,
            "ECDHE-ECDSA-AES256-GCM-SHA384");
  EXPECT_FALSE(
      connect(*served, limited_client(TLS1_3_VERSION, "", "TLS_AES_128_GCM_SHA256").get()).ok);
  EXPECT_FALSE(connect(*served, limited_client(TLS1_3_VERSION, "", "", "P-256").get()).ok);
  EXPECT_TRUE(connect(*served, limited_client(TLS1_3_VERSION, "", "", "P-384").get()).ok);
}

TEST_F(TlsPolicyTest, ANameOpenSslDoesNotKnowIsAnErrorNamingTheFieldAndTheName) {
  config_.ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA257";
  EXPECT_EQ(load_error(),
            R"(listeners[1].tls.ciphers: OpenSSL knows no cipher "ECDHE-ECDSA-AES128-GCM-SHA257")");
  config_.ciphers = std::string(config::kDefaultCiphers);
  config_.ciphersuites = "TLS_AES_128_GCM_SHA256:TLS_AES_512_GCM_SHA384";
  EXPECT_EQ(
      load_error(),
      R"(listeners[1].tls.ciphersuites: OpenSSL knows no TLS 1.3 suite "TLS_AES_512_GCM_SHA384")");
  config_.ciphersuites = std::string(config::kDefaultCiphersuites);
  config_.groups = "X25519:P-999";
  EXPECT_EQ(load_error(), R"(listeners[1].tls.groups: OpenSSL knows no group "P-999")");
  config_.groups = "X25519::P-256";
  EXPECT_EQ(load_error(), R"(listeners[1].tls.groups: OpenSSL knows no group "")");
}

TEST_F(TlsPolicyTest, AnEcdsaAndAnRsaCertificateForTheSameNamesServeEachClientTheOneItCanUse) {
  dual_certificates();
  const auto served = serve();
  ASSERT_EQ(served->certificates().size(), 2U);
  EXPECT_EQ(served->certificates()[0].context, served->certificates()[1].context);
  EXPECT_EQ(served->certificates()[0].key_type, "ECDSA");
  EXPECT_EQ(served->certificates()[1].key_type, "RSA");
  // TLS 1.2: the suite decides; TLS 1.3: the signature algorithms.
  EXPECT_EQ(connect(*served, limited_client(TLS1_2_VERSION, "ECDHE-RSA-AES128-GCM-SHA256").get())
                .served_subject,
            "/CN=rsa");
  EXPECT_EQ(connect(*served, limited_client(TLS1_2_VERSION, "ECDHE-ECDSA-AES128-GCM-SHA256").get())
                .served_subject,
            "/CN=ecdsa");
  EXPECT_EQ(
      connect(*served, limited_client(TLS1_3_VERSION, "", "", "", "rsa_pss_rsae_sha256").get())
          .served_subject,
      "/CN=rsa");
  EXPECT_EQ(connect(*served, limited_client(TLS1_3_VERSION).get()).served_subject, "/CN=ecdsa")
      << "a client that takes both gets the first";
  // TLS 1.2 ties an ECDSA certificate to the client's groups: one that offers only X25519
  // cannot take a P-256 certificate, and gets the RSA one.
  EXPECT_EQ(connect(*served, limited_client(TLS1_2_VERSION, "", "", "X25519").get()).served_subject,
            "/CN=rsa");
}

TEST_F(TlsPolicyTest, TwoCertificatesOfOneKeyTypeOrForOtherNamesKeepTheirOwnContexts) {
  config_.certificates = {cert_config(pki.issue("a", "a", {"a.test"})),
                          cert_config(pki.issue("b", "b", {"a.test"})),
                          cert_config(pki.issue("c", "c", {"c.test"}, TestPki::Key::kRsa2048))};
  const auto served = serve();
  EXPECT_NE(served->certificates()[0].context, served->certificates()[1].context);
  EXPECT_NE(served->certificates()[0].context, served->certificates()[2].context);
}

TEST_F(TlsPolicyTest, AnAlpnOfferWithNothingInCommonIsRefused) {
  config_.alpn = {"h2", "http/1.1"};
  const auto served = serve();
  const auto offering = [&](const std::vector<unsigned char>& protocols) {
    Ctx ctx = client();
    SSL_CTX_set_alpn_protos(ctx.get(), protocols.data(), static_cast<unsigned>(protocols.size()));
    return connect(*served, ctx.get());
  };
  const Result h2 = offering({2, 'h', '2'});
  EXPECT_TRUE(h2.ok);
  EXPECT_EQ(h2.alpn, "h2");
  EXPECT_FALSE(offering({3, 'f', 'o', 'o'}).ok) << "no_application_protocol";
  const Result none = connect(*served, client().get());
  EXPECT_TRUE(none.ok) << "a client that offers no ALPN speaks HTTP/1.1";
  EXPECT_EQ(none.alpn, "");
}

}  // namespace
}  // namespace sluice::tls
