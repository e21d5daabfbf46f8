// SPDX-License-Identifier: Apache-2.0
#include "gateway/tls/server_tls.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/test_pki.hpp"

namespace sluice::tls {
namespace {

using testing::TestPki;

config::TlsCertificateConfig cert_config(const TestPki::Issued& issued,
                                         std::vector<std::string> names = {}) {
  return {issued.cert, issued.key, std::move(names)};
}

TEST(NameMatchesTest, AWildcardCoversExactlyOneLabel) {
  EXPECT_TRUE(name_matches("api.example.com", "api.example.com"));
  EXPECT_FALSE(name_matches("api.example.com", "www.example.com"));
  EXPECT_TRUE(name_matches("*.example.com", "a.example.com"));
  EXPECT_FALSE(name_matches("*.example.com", "a.b.example.com"));
  EXPECT_FALSE(name_matches("*.example.com", "example.com"));
  EXPECT_FALSE(name_matches("*.example.com", ".example.com"));
}

class ServerTlsTest : public ::testing::Test {
 protected:
  TestPki pki;
};

TEST_F(ServerTlsTest, ChoosesByExactNameThenWildcardElseTheFirst) {
  const auto fallback = pki.issue("fallback", "fallback", {"fallback.test"});
  const auto wild = pki.issue("wild", "wild", {"*.wild.test"}, TestPki::Key::kRsa2048);
  const auto exact = pki.issue("exact", "exact", {"api.wild.test"});
  config::ListenerTlsConfig config;
  config.certificates = {cert_config(fallback), cert_config(wild), cert_config(exact)};
  std::string error;
  const auto served = ServerTls::load(config, "listeners[0].tls", error);
  ASSERT_TRUE(served) << error;
  EXPECT_EQ(served->select("api.wild.test").subject, "/CN=exact");  // exact beats the wildcard
  EXPECT_EQ(served->select("www.wild.test").subject, "/CN=wild");
  EXPECT_EQ(served->select("a.www.wild.test").subject, "/CN=fallback");  // one label only
  EXPECT_EQ(served->select("fallback.test").subject, "/CN=fallback");
  EXPECT_EQ(served->select("").subject, "/CN=fallback");
  EXPECT_EQ(served->select("unknown.test").subject, "/CN=fallback");
  EXPECT_GT(served->certificates()[0].not_after, std::chrono::system_clock::now());
}

TEST_F(ServerTlsTest, ServerNamesReplaceTheCertificatesOwn) {
  const auto a = pki.issue("a", "a", {"a.test"});
  const auto b = pki.issue("b", "b", {"b.test"});
  config::ListenerTlsConfig config;
  config.certificates = {cert_config(a), cert_config(b, {"Other.Test"})};
  std::string error;
  const auto served = ServerTls::load(config, "listeners[0].tls", error);
  ASSERT_TRUE(served) << error;
  EXPECT_EQ(served->select("other.test").subject, "/CN=b");
  EXPECT_EQ(served->select("b.test").subject, "/CN=a") << "b.test is no longer b's name";
}

TEST_F(ServerTlsTest, RefusesWhatCannotServeNamingTheField) {
  const auto a = pki.issue("a", "a", {"a.test"});
  const auto b = pki.issue("b", "b", {"b.test"});
  const auto expired = pki.issue_expired("old", "old", {"old.test"});
  const auto load_error = [](config::TlsCertificateConfig cert) {
    config::ListenerTlsConfig config;
    config.certificates = {std::move(cert)};
    std::string error;
    EXPECT_FALSE(ServerTls::load(config, "listeners[1].tls", error));
    return error;
  };
  EXPECT_EQ(load_error({a.cert, b.key, {}}),
            "listeners[1].tls.certificates[0].key: " + b.key + " is not the key of " + a.cert);
  EXPECT_TRUE(
      load_error({"/nonexistent.pem", a.key, {}})
          .starts_with("listeners[1].tls.certificates[0].cert: cannot load /nonexistent.pem"));
  EXPECT_TRUE(
      load_error({a.cert, "/nonexistent.key", {}})
          .starts_with("listeners[1].tls.certificates[0].key: cannot load /nonexistent.key"));
  EXPECT_EQ(load_error({expired.cert, expired.key, {}}),
            "listeners[1].tls.certificates[0].cert: " + expired.cert + " has expired");
}

}  // namespace
}  // namespace sluice::tls
