// SPDX-License-Identifier: Apache-2.0
#pragma once

// A JWS in compact serialization (RFC 7515 §7.1): its header and claims read, its signature
// checked by OpenSSL (docs/decisions/0022-jwt-reader-on-openssl.md).

#include <openssl/evp.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/auth/jws_algorithm.hpp"

namespace sluice::auth {

/// Why a token could not be read.
enum class JwsError {
  kMalformed,            ///< not three base64url parts, or a header or claims not a JSON object
  kAlgorithmNotAllowed,  ///< `alg` is `none` or not one sluice verifies
};

/// A token read but not yet verified: nothing in it may be trusted before verify() is true.
struct CompactJws {
  JwsAlgorithm algorithm = JwsAlgorithm::kES256;
  std::string kid;            ///< the header's `kid`, empty when absent
  nlohmann::json claims;      ///< the payload, a JSON object
  std::string signing_input;  ///< the first two parts and the dot between them
  std::string signature;      ///< the third part, decoded
};

/// Reads `token` (a header with `crit` is refused as malformed: sluice understands no
/// extension). Sets `error` and answers nullopt when it cannot.
[[nodiscard]] std::optional<CompactJws> read_compact_jws(std::string_view token, JwsError& error);

/// True when `jws`'s signature is `key`'s over its signing input with its algorithm (which
/// the caller checked the key allows). Not for HS256.
[[nodiscard]] bool verify_signature(const CompactJws& jws, EVP_PKEY* key);

/// True when `jws` is HS256 and its signature is the HMAC-SHA256 of its signing input under
/// `secret`, compared in constant time.
[[nodiscard]] bool verify_hs256(const CompactJws& jws, std::string_view secret);

}  // namespace sluice::auth
