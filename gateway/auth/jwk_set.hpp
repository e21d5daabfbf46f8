// SPDX-License-Identifier: Apache-2.0
#pragma once

// A JSON Web Key Set (RFC 7517 §5) as public keys OpenSSL verifies with
// (docs/decisions/0022-jwt-reader-on-openssl.md).

#include <openssl/evp.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/auth/jws_algorithm.hpp"

namespace sluice::auth {

/// One verification key: its `kid` (may be empty), the algorithms it may verify and the key.
/// The algorithms are fixed when the key is read: the JWK's `alg` if it has one, else what
/// its type allows (RSA: RS256 and PS256; EC P-256: ES256; EC P-384: ES384; OKP Ed25519:
/// EdDSA). HS256 never comes from a key set.
struct VerificationKey {
  std::string kid;
  std::vector<JwsAlgorithm> algorithms;
  std::shared_ptr<EVP_PKEY> key;

  [[nodiscard]] bool allows(JwsAlgorithm algorithm) const;
};

/// The keys of one JWKS document, immutable once read; shared by every worker.
class JwkSet {
 public:
  /// Reads `json` (`{"keys": [...]}`). Keys that cannot verify anything here (private parts
  /// only, `use` other than `sig`, unknown `kty` or curve, RSA below 2048 bits, a malformed
  /// member) are left out, each with a line in `skipped`. `error` is set, and the set empty,
  /// when the document itself is not a key set.
  static JwkSet parse(std::string_view json, std::string& error, std::vector<std::string>& skipped);

  /// The key for a token's `kid` (empty: the set's only key when it has exactly one), or null.
  [[nodiscard]] const VerificationKey* find(std::string_view kid) const;
  [[nodiscard]] std::size_t size() const noexcept { return keys_.size(); }
  [[nodiscard]] const std::vector<VerificationKey>& keys() const noexcept { return keys_; }

 private:
  std::vector<VerificationKey> keys_;
};

}  // namespace sluice::auth
