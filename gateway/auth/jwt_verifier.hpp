// SPDX-License-Identifier: Apache-2.0
#pragma once

// A bearer token verified (docs/decisions/0022-jwt-reader-on-openssl.md):
// the algorithm allowed, the key by kid, the signature, then exp/nbf with leeway, iss, aud
// and the user and tier claims. Pure: the time is the caller's.

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gateway/auth/jwk_set.hpp"
#include "gateway/auth/jws_algorithm.hpp"

namespace sluice::auth {

/// Why a credential was refused: the fixed `reason` list of a 401 (decision 0022).
enum class AuthFailure {
  kMissing,
  kMalformed,
  kBadSignature,
  kExpired,
  kNotYetValid,
  kWrongIssuer,
  kWrongAudience,
  kUnknownKey,
  kAlgorithmNotAllowed,
};

/// Its name in answers, logs and metrics (`bad_signature`, ...).
[[nodiscard]] std::string_view reason_name(AuthFailure failure);

/// What a JWT must satisfy (the config's `auth.jwt`, secrets resolved).
struct JwtPolicy {
  std::vector<JwsAlgorithm> algorithms;  ///< those listed; HS256 needs `hs256_secret`
  std::optional<std::string> issuer;     ///< `iss` must equal it when set
  std::vector<std::string> audiences;    ///< `aud` must name one of them when not empty
  std::string user_claim = "sub";
  std::optional<std::string> tier_claim;
  std::chrono::seconds leeway{30};
  std::string hs256_secret;  ///< empty: HS256 is refused
};

/// Who a verified token says the caller is.
struct VerifiedToken {
  std::string user;
  std::optional<std::string> tier;
  /// `exp` (seconds since the epoch); nullopt when the token has none.
  std::optional<std::int64_t> expires;
};

using Verification = std::variant<VerifiedToken, AuthFailure>;

/// Verifies tokens against one policy and one key set. Immutable, shared by every worker.
class JwtVerifier {
 public:
  JwtVerifier(JwtPolicy policy, std::shared_ptr<const JwkSet> keys);

  [[nodiscard]] Verification verify(std::string_view token,
                                    std::chrono::system_clock::time_point now) const;

  [[nodiscard]] const JwtPolicy& policy() const noexcept { return policy_; }

 private:
  [[nodiscard]] std::optional<AuthFailure> check_claims(
      const nlohmann::json& claims, std::chrono::system_clock::time_point now) const;

  JwtPolicy policy_;
  std::shared_ptr<const JwkSet> keys_;
};

}  // namespace sluice::auth
