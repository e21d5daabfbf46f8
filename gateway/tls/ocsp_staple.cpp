// SPDX-License-Identifier: Apache-2.0
#include "gateway/tls/ocsp_staple.hpp"

#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/x509v3.h>

#include <ctime>

#include "gateway/tls/openssl_error.hpp"

namespace sluice::tls {
namespace {

std::chrono::system_clock::time_point to_time(const ASN1_GENERALIZEDTIME* at) {
  std::tm tm{};
  ASN1_TIME_to_tm(at, &tm);
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const noexcept { Free(p); }
};
using ResponsePtr = std::unique_ptr<OCSP_RESPONSE, Deleter<OCSP_RESPONSE, &OCSP_RESPONSE_free>>;
using BasicPtr = std::unique_ptr<OCSP_BASICRESP, Deleter<OCSP_BASICRESP, &OCSP_BASICRESP_free>>;
using CertIdPtr = std::unique_ptr<OCSP_CERTID, Deleter<OCSP_CERTID, &OCSP_CERTID_free>>;
using RequestPtr = std::unique_ptr<OCSP_REQUEST, Deleter<OCSP_REQUEST, &OCSP_REQUEST_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Deleter<X509_STORE, &X509_STORE_free>>;

}  // namespace

X509* find_issuer(X509* leaf, STACK_OF(X509) * chain) noexcept {
  for (int i = 0; i < sk_X509_num(chain); ++i) {
    X509* candidate = sk_X509_value(chain, i);
    if (X509_check_issued(candidate, leaf) == X509_V_OK) {
      return candidate;
    }
  }
  return nullptr;
}

std::string ocsp_responder_url(X509* leaf) {
  STACK_OF(OPENSSL_STRING)* urls = X509_get1_ocsp(leaf);
  std::string url;
  if (urls != nullptr && sk_OPENSSL_STRING_num(urls) > 0) {
    url = sk_OPENSSL_STRING_value(urls, 0);
  }
  X509_email_free(urls);  // (frees a stack of strings, whatever they are)
  return url;
}

std::vector<unsigned char> ocsp_request(X509* leaf, X509* issuer) {
  RequestPtr request(OCSP_REQUEST_new());
  OCSP_CERTID* id = OCSP_cert_to_id(EVP_sha1(), leaf, issuer);
  if (!request || id == nullptr || OCSP_request_add0_id(request.get(), id) == nullptr) {
    OCSP_CERTID_free(id);
    return {};
  }
  unsigned char* out = nullptr;
  const int length = i2d_OCSP_REQUEST(request.get(), &out);
  if (length <= 0) {
    return {};
  }
  std::vector<unsigned char> der(out, out + length);
  OPENSSL_free(out);
  return der;
}

std::optional<OcspResponse> verify_ocsp_response(std::span<const unsigned char> der, X509* leaf,
                                                 X509* issuer,
                                                 std::chrono::system_clock::time_point now,
                                                 std::string& error) {
  ERR_clear_error();
  const unsigned char* p = der.data();
  ResponsePtr response(d2i_OCSP_RESPONSE(nullptr, &p, static_cast<long>(der.size())));
  if (!response || p != der.data() + der.size()) {
    error = "not a DER OCSP response";
    return std::nullopt;
  }
  if (const int status = OCSP_response_status(response.get());
      status != OCSP_RESPONSE_STATUS_SUCCESSFUL) {
    error = std::string("the responder answered ") + OCSP_response_status_str(status);
    return std::nullopt;
  }
  BasicPtr basic(OCSP_response_get1_basic(response.get()));
  if (!basic || issuer == nullptr) {
    error = !basic ? "the response has no basic response"
                   : "the certificate file holds no issuer of the certificate to verify against";
    return std::nullopt;
  }
  // The signer: the issuer itself, or a responder certificate it issued for OCSP signing (in
  // the response); trusted is the issuer alone, not any root.
  StorePtr store(X509_STORE_new());
  X509_STORE_add_cert(store.get(), issuer);
  STACK_OF(X509)* issuer_only = sk_X509_new_null();
  sk_X509_push(issuer_only, issuer);
  const int verified = OCSP_basic_verify(basic.get(), issuer_only, store.get(),
                                         OCSP_TRUSTOTHER | OCSP_PARTIAL_CHAIN);
  sk_X509_free(issuer_only);
  if (verified != 1) {
    error = "the response's signature does not verify against the certificate's issuer: " +
            openssl_reason();
    return std::nullopt;
  }
  CertIdPtr id(OCSP_cert_to_id(EVP_sha1(), leaf, issuer));
  int status = 0;
  int reason = 0;
  ASN1_GENERALIZEDTIME* revoked_at = nullptr;
  ASN1_GENERALIZEDTIME* this_update = nullptr;
  ASN1_GENERALIZEDTIME* next_update = nullptr;
  if (!id || OCSP_resp_find_status(basic.get(), id.get(), &status, &reason, &revoked_at,
                                   &this_update, &next_update) != 1) {
    error = "the response is not about this certificate";
    return std::nullopt;
  }
  if (status != V_OCSP_CERTSTATUS_GOOD) {
    error = std::string("the certificate's status is ") + OCSP_cert_status_str(status);
    return std::nullopt;
  }
  if (next_update == nullptr) {
    error = "the response has no nextUpdate (it could never be known to be stale)";
    return std::nullopt;
  }
  OcspResponse out{{der.begin(), der.end()}, to_time(this_update), to_time(next_update)};
  // A minute of leeway for the responder's clock on thisUpdate; none on nextUpdate.
  if (out.this_update > now + std::chrono::minutes(1)) {
    error = "the response is not valid yet (thisUpdate is in the future)";
    return std::nullopt;
  }
  if (out.next_update <= now) {
    error = "the response is stale (past its nextUpdate)";
    return std::nullopt;
  }
  ERR_clear_error();
  return out;
}

}  // namespace sluice::tls
