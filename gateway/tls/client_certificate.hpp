// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <openssl/ssl.h>

#include <string>

// The names of a client's verified certificate (docs/tls.md "Client certificates"), which the
// `client_cert` identity source keys limits by.
namespace sluice::tls {

/// What a verified client certificate says about its holder. Empty fields: the certificate has
/// no such name (or there was no certificate). A plain value, copied per connection.
struct ClientCertificate {
  std::string subject_cn;  ///< the subject's (last) commonName
  std::string san_dns;     ///< the first DNS name of its subjectAltName
  std::string san_uri;     ///< the first URI of its subjectAltName
};

/// The names of the certificate `ssl`'s peer presented, when OpenSSL verified it (the
/// listener has a client_ca); all empty otherwise. Call after the handshake.
[[nodiscard]] ClientCertificate read_client_certificate(const SSL* ssl);

}  // namespace sluice::tls
