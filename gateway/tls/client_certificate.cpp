// SPDX-License-Identifier: Apache-2.0
#include "gateway/tls/client_certificate.hpp"

#include <openssl/x509v3.h>

#include <memory>

namespace sluice::tls {
namespace {

std::string text_of(const ASN1_STRING* text) {
  return {reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
          static_cast<std::size_t>(ASN1_STRING_length(text))};
}

std::string common_name(X509* cert) {
  X509_NAME* subject = X509_get_subject_name(cert);
  const int at = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  int last = at;
  for (int next = at; next >= 0; next = X509_NAME_get_index_by_NID(subject, NID_commonName, next)) {
    last = next;  // several CNs: the most specific (last) one, as RFC 6125 readers do
  }
  return last < 0 ? std::string()
                  : text_of(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, last)));
}

}  // namespace

ClientCertificate read_client_certificate(const SSL* ssl) {
  ClientCertificate out;
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) {
    return out;  // nothing presented, or nothing verified it (no client_ca): no names
  }
  out.subject_cn = common_name(cert);
  const std::unique_ptr<GENERAL_NAMES, decltype(&GENERAL_NAMES_free)> sans(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)),
      &GENERAL_NAMES_free);
  for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(sans.get(), i);
    if (name->type == GEN_DNS && out.san_dns.empty()) {
      out.san_dns = text_of(name->d.dNSName);
    } else if (name->type == GEN_URI && out.san_uri.empty()) {
      out.san_uri = text_of(name->d.uniformResourceIdentifier);
    }
  }
  return out;
}

}  // namespace sluice::tls
