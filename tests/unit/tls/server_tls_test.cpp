// SPDX-License-Identifier: Apache-2.0
#include "gateway/tls/server_tls.hpp"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <filesystem>
#include <memory>

#include "gateway/tls/client_certificate.hpp"
#include "tests/unit/tls/memory_handshake.hpp"

namespace sluice::tls {
namespace {

using namespace memory_handshake;  // NOLINT(google-build-using-namespace)

TEST(NameMatchesTest, AWildcardCoversExactlyOneLabel) {
  EXPECT_TRUE(name_matches("api.example.com", "api.example.com"));
  EXPECT_FALSE(name_matches("api.example.com", "www.example.com"));
  EXPECT_TRUE(name_matches("*.example.com", "a.example.com"));
  EXPECT_FALSE(name_matches("*.example.com", "a.b.example.com"));
  EXPECT_FALSE(name_matches("*.example.com", "example.com"));
  EXPECT_FALSE(name_matches("*.example.com", ".example.com"));
}

TEST_F(ServerTlsTest, ChoosesByExactNameThenWildcardElseTheFirst) {
  const auto fallback = pki.issue("fallback", "fallback", {"fallback.test"});
  const auto wild = pki.issue("wild", "wild", {"*.wild.test"}, TestPki::Key::kRsa2048);
  const auto exact = pki.issue("exact", "exact", {"api.wild.test"});
  config::ListenerTlsConfig config;
  config.certificates = {cert_config(fallback), cert_config(wild), cert_config(exact)};
  std::string error;
  const auto served = ServerTls::load(config, "listeners[0].tls", keys_, error);
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
  const auto served = ServerTls::load(config, "listeners[0].tls", keys_, error);
  ASSERT_TRUE(served) << error;
  EXPECT_EQ(served->select("other.test").subject, "/CN=b");
  EXPECT_EQ(served->select("b.test").subject, "/CN=a") << "b.test is no longer b's name";
}

TEST_F(ServerTlsTest, RefusesWhatCannotServeNamingTheField) {
  const auto a = pki.issue("a", "a", {"a.test"});
  const auto b = pki.issue("b", "b", {"b.test"});
  const auto expired = pki.issue_expired("old", "old", {"old.test"});
  const auto load_error = [this](config::TlsCertificateConfig cert) {
    config::ListenerTlsConfig config;
    config.certificates = {std::move(cert)};
    std::string error;
    EXPECT_FALSE(ServerTls::load(config, "listeners[1].tls", keys_, error));
    return error;
  };
  EXPECT_EQ(load_error({a.cert, b.key, {}, {}}),
            "listeners[1].tls.certificates[0].key: " + b.key + " is not the key of " + a.cert);
  EXPECT_TRUE(
      load_error({"/nonexistent.pem", a.key, {}, {}})
          .starts_with("listeners[1].tls.certificates[0].cert: cannot load /nonexistent.pem"));
  EXPECT_TRUE(
      load_error({a.cert, "/nonexistent.key", {}, {}})
          .starts_with("listeners[1].tls.certificates[0].key: cannot load /nonexistent.key"));
  EXPECT_EQ(load_error({expired.cert, expired.key, {}, {}}),
            "listeners[1].tls.certificates[0].cert: " + expired.cert + " has expired");
}

TEST_F(ServerTlsTest, AClientCaFileThatCannotBeReadIsAnErrorNamingTheField) {
  const auto a = pki.issue("a", "a", {"a.test"});
  config::ListenerTlsConfig config;
  config.certificates = {cert_config(a)};
  config.client_ca = "/nonexistent-ca.pem";
  std::string error;
  EXPECT_FALSE(ServerTls::load(config, "listeners[0].tls", keys_, error));
  EXPECT_TRUE(error.starts_with("listeners[0].tls.client_ca: cannot load /nonexistent-ca.pem"))
      << error;
}

TEST_F(MemoryHandshakeTest, ATicketResumesAcrossOneKeyRotationButNotTwo) {
  const auto served = serve();
  const Ctx ctx = client();
  Result first = connect(*served, ctx.get());
  ASSERT_TRUE(first.ok);
  EXPECT_FALSE(first.reused);
  ASSERT_TRUE(first.session);
  EXPECT_TRUE(connect(*served, ctx.get(), first.session.get()).reused);
  keys_->rotate();
  const Result after_one = connect(*served, ctx.get(), first.session.get());
  EXPECT_TRUE(after_one.reused) << "the previous key still opens its tickets";
  keys_->rotate();
  const Result after_two = connect(*served, ctx.get(), first.session.get());
  EXPECT_TRUE(after_two.ok);
  EXPECT_FALSE(after_two.reused) << "a key two rotations old is gone: a full handshake";
}

TEST_F(MemoryHandshakeTest, EveryResumedSessionGetsAFreshTicketToResumeAgain) {
  // A client that resumes from the session of its last connection (wrk does) must not fall
  // back to a full handshake every other time: TLS 1.3 tickets are single-use.
  const auto served = serve();
  const Ctx ctx = client();
  Result last = connect(*served, ctx.get());
  ASSERT_TRUE(last.ok);
  for (int i = 0; i < 3; ++i) {
    Result next = connect(*served, ctx.get(), last.session.get());
    ASSERT_TRUE(next.ok);
    EXPECT_TRUE(next.reused) << "resumption " << i;
    const auto ticket = [](const SSL_SESSION* session) {
      const unsigned char* data = nullptr;
      std::size_t size = 0;
      SSL_SESSION_get0_ticket(session, &data, &size);
      return std::string(reinterpret_cast<const char*>(data), size);
    };
    EXPECT_NE(ticket(next.session.get()), ticket(last.session.get()))
        << "resumption " << i << " left the client its used ticket only";
    last = std::move(next);
  }
}

TEST_F(MemoryHandshakeTest, ATicketResumesOnItsOwnListenerOnly) {
  const auto here = serve("listeners[0].tls");
  const auto there = serve("listeners[1].tls");  // same keys, same certificate
  const Ctx ctx = client();
  Result first = connect(*here, ctx.get());
  ASSERT_TRUE(first.ok);
  const Result elsewhere = connect(*there, ctx.get(), first.session.get());
  EXPECT_TRUE(elsewhere.ok);
  EXPECT_FALSE(elsewhere.reused);
}

TEST_F(MemoryHandshakeTest, ARequiredClientCertificateMustBeOneTheCaSigned) {
  config_.client_ca = pki.ca_cert();
  config_.require_client_cert = true;
  const auto served = serve();
  const auto partner =
      pki.issue("partner", "partner-a", {"a.partners.test", "URI:spiffe://partners/a"});
  TestPki stranger_pki;
  const auto stranger = stranger_pki.issue("stranger", "stranger", {"stranger.test"});

  const Result with_cert = connect(*served, client(&partner).get());
  ASSERT_TRUE(with_cert.ok);
  EXPECT_EQ(with_cert.client_cert.subject_cn, "partner-a");
  EXPECT_EQ(with_cert.client_cert.san_dns, "a.partners.test");
  EXPECT_EQ(with_cert.client_cert.san_uri, "spiffe://partners/a");
  EXPECT_FALSE(connect(*served, client().get()).ok) << "no certificate";
  EXPECT_FALSE(connect(*served, client(&stranger).get()).ok) << "another CA's certificate";
}

TEST_F(MemoryHandshakeTest, AnOptionalClientCertificateIsVerifiedWhenGiven) {
  config_.client_ca = pki.ca_cert();
  const auto served = serve();
  const auto partner = pki.issue("partner", "partner-a", {});
  TestPki stranger_pki;
  const auto stranger = stranger_pki.issue("stranger", "stranger", {});

  const Result anonymous = connect(*served, client().get());
  ASSERT_TRUE(anonymous.ok);
  EXPECT_EQ(anonymous.client_cert.subject_cn, "");
  const Result with_cert = connect(*served, client(&partner).get());
  ASSERT_TRUE(with_cert.ok);
  EXPECT_EQ(with_cert.client_cert.subject_cn, "partner-a");
  EXPECT_EQ(with_cert.client_cert.san_dns, "");
  EXPECT_FALSE(connect(*served, client(&stranger).get()).ok);
}

TEST_F(MemoryHandshakeTest, AResumedSessionKeepsItsClientCertificate) {
  config_.client_ca = pki.ca_cert();
  config_.require_client_cert = true;
  const auto served = serve();
  const auto partner = pki.issue("partner", "partner-a", {});
  const Ctx ctx = client(&partner);
  Result first = connect(*served, ctx.get());
  ASSERT_TRUE(first.ok);
  const Result again = connect(*served, ctx.get(), first.session.get());
  ASSERT_TRUE(again.ok);
  EXPECT_TRUE(again.reused);
  EXPECT_EQ(again.client_cert.subject_cn, "partner-a");
}

}  // namespace
}  // namespace sluice::tls
