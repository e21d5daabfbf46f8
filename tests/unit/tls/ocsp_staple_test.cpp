// SPDX-License-Identifier: Apache-2.0
// OCSP stapling (docs/tls.md, "OCSP stapling"): which responses are ever stapled, a DER file
// stapled to the clients that ask, and the responder URL of the fetch mode.
#include "gateway/tls/ocsp_staple.hpp"

#include <gtest/gtest.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>

#include <fstream>

#include "gateway/tls/ocsp_fetcher.hpp"
#include "tests/unit/tls/memory_handshake.hpp"

namespace sluice::tls {
namespace {

using namespace memory_handshake;  // NOLINT(google-build-using-namespace)
using std::chrono::minutes;
using std::chrono::system_clock;

struct X509Deleter {
  void operator()(X509* x) const noexcept { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Deleter>;

X509Ptr read_cert(const std::string& file) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(file.c_str(), "r"), &BIO_free);
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

/// A DER OCSP response about `leaf`, signed by `signer_cert`/`signer_key` as issued by
/// `issuer`, with `status` and thisUpdate/nextUpdate at now + the offsets (no nextUpdate when
/// `next` is nullopt).
std::vector<unsigned char> response(X509* leaf, X509* issuer, const std::string& signer_cert,
                                    const std::string& signer_key, int status, minutes this_at,
                                    std::optional<minutes> next) {
  const X509Ptr signer = read_cert(signer_cert);
  std::unique_ptr<BIO, decltype(&BIO_free)> key_bio(BIO_new_file(signer_key.c_str(), "r"),
                                                    &BIO_free);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
  OCSP_BASICRESP* basic = OCSP_BASICRESP_new();
  OCSP_CERTID* id = OCSP_cert_to_id(EVP_sha1(), leaf, issuer);
  const auto now = system_clock::to_time_t(system_clock::now());
  ASN1_TIME* this_update = ASN1_GENERALIZEDTIME_set(nullptr, now + this_at.count() * 60);
  ASN1_TIME* next_update =
      next ? ASN1_GENERALIZEDTIME_set(nullptr, now + next->count() * 60) : nullptr;
  ASN1_TIME* revoked = ASN1_GENERALIZEDTIME_set(nullptr, now - 3600);
  OCSP_basic_add1_status(basic, id, status, OCSP_REVOKED_STATUS_KEYCOMPROMISE,
                         status == V_OCSP_CERTSTATUS_REVOKED ? revoked : nullptr, this_update,
                         next_update);
  OCSP_basic_sign(basic, signer.get(), key, EVP_sha256(), nullptr, OCSP_NOCERTS);
  OCSP_RESPONSE* whole = OCSP_response_create(OCSP_RESPONSE_STATUS_SUCCESSFUL, basic);
  unsigned char* out = nullptr;
  const int length = i2d_OCSP_RESPONSE(whole, &out);
  std::vector<unsigned char> der(out, out + length);
  OPENSSL_free(out);
  OCSP_RESPONSE_free(whole);
  OCSP_BASICRESP_free(basic);
  OCSP_CERTID_free(id);
  ASN1_TIME_free(this_update);
  ASN1_TIME_free(next_update);
  ASN1_TIME_free(revoked);
  EVP_PKEY_free(key);
  return der;
}

class OcspStapleTest : public MemoryHandshakeTest {
 protected:
  TestPki::Issued issued =
      pki.issue_with_ocsp("stapled", "stapled", {"server.test"}, "http://127.0.0.1:9/ocsp");
  X509Ptr leaf = read_cert(issued.cert);
  X509Ptr ca = read_cert(pki.ca_cert());

  std::vector<unsigned char> good(minutes this_at = minutes(-1),
                                  std::optional<minutes> next = minutes(60)) {
    return response(leaf.get(), ca.get(), pki.ca_cert(), pki.ca_key(), V_OCSP_CERTSTATUS_GOOD,
                    this_at, next);
  }
  std::string verdict(const std::vector<unsigned char>& der) {
    std::string error;
    const auto verified =
        verify_ocsp_response(der, leaf.get(), ca.get(), system_clock::now(), error);
    return verified ? "ok" : error;
  }
  std::string write(const std::vector<unsigned char>& der, const std::string& name) {
    const std::string path = (pki.dir() / name).string();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(der.data()), static_cast<std::streamsize>(der.size()));
    return path;
  }
};

TEST_F(OcspStapleTest, OnlyACurrentGoodResponseSignedByTheIssuerAboutThisCertificateVerifies) {
  EXPECT_EQ(verdict(good()), "ok");
  EXPECT_EQ(verdict(good(minutes(-120), minutes(-60))),
            "the response is stale (past its nextUpdate)");
  EXPECT_EQ(verdict(good(minutes(30))),
            "the response is not valid yet (thisUpdate is in the future)");
  EXPECT_EQ(verdict(good(minutes(-1), std::nullopt)),
            "the response has no nextUpdate (it could never be known to be stale)");
  EXPECT_EQ(verdict(response(leaf.get(), ca.get(), pki.ca_cert(), pki.ca_key(),
                             V_OCSP_CERTSTATUS_REVOKED, minutes(-1), minutes(60))),
            "the certificate's status is revoked");
  TestPki other;
  const X509Ptr other_ca = read_cert(other.ca_cert());
  // Signed by another CA that claims to be the issuer: the signature does not verify.
  EXPECT_TRUE(verdict(response(leaf.get(), ca.get(), other.ca_cert(), other.ca_key(),
                               V_OCSP_CERTSTATUS_GOOD, minutes(-1), minutes(60)))
                  .starts_with("the response's signature does not verify"));
  // About another certificate.
  const auto stranger = pki.issue_with_ocsp("stranger", "stranger", {"x.test"}, "http://x/");
  const X509Ptr stranger_leaf = read_cert(stranger.cert);
  EXPECT_EQ(verdict(response(stranger_leaf.get(), ca.get(), pki.ca_cert(), pki.ca_key(),
                             V_OCSP_CERTSTATUS_GOOD, minutes(-1), minutes(60))),
            "the response is not about this certificate");
  EXPECT_EQ(verdict({'n', 'o', 'p', 'e'}), "not a DER OCSP response");
}

TEST_F(OcspStapleTest, AFileResponseIsStapledToClientsThatAskOnly) {
  config_.certificates = {cert_config(issued)};
  const std::vector<unsigned char> file = good();
  config_.certificates[0].ocsp = write(file, "good.der");
  const auto served = serve();
  Ctx asking = client();
  SSL_CTX_set_tlsext_status_type(asking.get(), TLSEXT_STATUSTYPE_ocsp);
  const Result stapled = connect(*served, asking.get());
  ASSERT_TRUE(stapled.ok);
  EXPECT_EQ(stapled.stapled, std::string(file.begin(), file.end())) << "the file, as it is";
  EXPECT_EQ(connect(*served, client().get()).stapled, "") << "nothing for a client not asking";
}

TEST_F(OcspStapleTest, ABadFileIsAnErrorNamingTheFieldAStaleOneStaplesNothing) {
  config_.certificates = {cert_config(issued)};
  config_.certificates[0].ocsp = write({'x'}, "bad.der");
  std::string error;
  EXPECT_FALSE(ServerTls::load(config_, "listeners[0].tls", keys_, error));
  EXPECT_EQ(error, "listeners[0].tls.certificates[0].ocsp: " + *config_.certificates[0].ocsp +
                       ": not a DER OCSP response");
  config_.certificates[0].ocsp = "/nonexistent.der";
  EXPECT_FALSE(ServerTls::load(config_, "listeners[0].tls", keys_, error));
  EXPECT_EQ(error, "listeners[0].tls.certificates[0].ocsp: cannot read /nonexistent.der");

  config_.certificates[0].ocsp = write(good(minutes(-120), minutes(-60)), "stale.der");
  const auto served = serve();
  EXPECT_NE(served->certificates()[0].ocsp_problem.find("stale"), std::string::npos);
  Ctx asking = client();
  SSL_CTX_set_tlsext_status_type(asking.get(), TLSEXT_STATUSTYPE_ocsp);
  const Result r = connect(*served, asking.get());
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.stapled, "");
}

TEST_F(OcspStapleTest, FetchNeedsTheIssuerInTheFileAndAResponderInTheCertificate) {
  config_.certificates = {cert_config(pki.issue("plain", "plain", {"server.test"}))};
  config_.certificates[0].ocsp = "fetch";
  std::string error;
  EXPECT_FALSE(ServerTls::load(config_, "listeners[0].tls", keys_, error));
  EXPECT_NE(error.find("needs the issuer's certificate after the leaf"), std::string::npos)
      << error;
  config_.certificates = {cert_config(issued)};
  config_.certificates[0].ocsp = "fetch";
  const auto served = serve();
  EXPECT_TRUE(served->certificates()[0].ocsp_fetch);
  EXPECT_EQ(ocsp_responder_url(served->certificates()[0].leaf), "http://127.0.0.1:9/ocsp");
}

TEST(HttpUrlTest, ResponderUrlsAreSplitIntoHostPortAndTarget) {
  HttpUrl url;
  ASSERT_TRUE(parse_http_url("http://ocsp.example.com", url));
  EXPECT_EQ(url.host, "ocsp.example.com");
  EXPECT_EQ(url.port, "80");
  EXPECT_EQ(url.target, "/");
  url = {};
  ASSERT_TRUE(parse_http_url("http://127.0.0.1:8888/a/b", url));
  EXPECT_EQ(url.host, "127.0.0.1");
  EXPECT_EQ(url.port, "8888");
  EXPECT_EQ(url.target, "/a/b");
  url = {};
  ASSERT_TRUE(parse_http_url("http://[::1]:81/", url));
  EXPECT_EQ(url.host, "::1");
  EXPECT_EQ(url.port, "81");
  EXPECT_FALSE(parse_http_url("https://ocsp.example.com/", url));
  EXPECT_FALSE(parse_http_url("http://", url));
  EXPECT_FALSE(parse_http_url("http://a:99999/", url));
  EXPECT_FALSE(parse_http_url("http://a:x/", url));
}

}  // namespace
}  // namespace sluice::tls
