// SPDX-License-Identifier: Apache-2.0
#include "gateway/auth/jwt_verifier.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "gateway/auth/compact_jws.hpp"

namespace sluice::auth {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 9> kReasons{
    "missing",        "malformed",     "bad_signature",
    "expired",        "not_yet_valid", "wrong_issuer",
    "wrong_audience", "unknown_key",   "algorithm_not_allowed"};

/// A NumericDate claim (RFC 7519 §2): absent is nullopt, a number is its whole seconds, and
/// anything else sets `bad`.
std::optional<std::int64_t> numeric_date(const json& claims, const char* name, bool& bad) {
  const auto it = claims.find(name);
  if (it == claims.end()) {
    return std::nullopt;
  }
  if (it->is_number_integer()) {
    return it->get<std::int64_t>();
  }
  if (it->is_number_float() && std::abs(it->get<double>()) < 1e15) {
    return static_cast<std::int64_t>(it->get<double>());
  }
  bad = true;
  return std::nullopt;
}

/// A claim naming the caller: a non-empty string, or a whole number written out.
std::optional<std::string> name_claim(const json& claims, const std::string& name) {
  const auto it = claims.find(name);
  if (it == claims.end()) {
    return std::nullopt;
  }
  if (it->is_string() && !it->get_ref<const std::string&>().empty()) {
    return it->get<std::string>();
  }
  if (it->is_number_integer()) {
    return it->dump();
  }
  return std::nullopt;
}

}  // namespace

std::string_view reason_name(AuthFailure failure) {
  return kReasons.at(static_cast<std::size_t>(failure));
}

JwtVerifier::JwtVerifier(JwtPolicy policy, std::shared_ptr<const JwkSet> keys)
    : policy_(std::move(policy)), keys_(std::move(keys)) {}

Verification JwtVerifier::verify(std::string_view token,
                                 std::chrono::system_clock::time_point now) const {
  JwsError error{};
  const auto jws = read_compact_jws(token, error);
  if (!jws) {
    return error == JwsError::kAlgorithmNotAllowed ? AuthFailure::kAlgorithmNotAllowed
                                                   : AuthFailure::kMalformed;
  }
  const auto& allowed = policy_.algorithms;
  if (std::find(allowed.begin(), allowed.end(), jws->algorithm) == allowed.end()) {
    return AuthFailure::kAlgorithmNotAllowed;
  }
  if (jws->algorithm == JwsAlgorithm::kHS256) {
    if (policy_.hs256_secret.empty()) {
      return AuthFailure::kAlgorithmNotAllowed;
    }
    if (!verify_hs256(*jws, policy_.hs256_secret)) {
      return AuthFailure::kBadSignature;
    }
  } else {
    const VerificationKey* key = keys_ ? keys_->find(jws->kid) : nullptr;
    if (key == nullptr) {
      return AuthFailure::kUnknownKey;
    }
    if (!key->allows(jws->algorithm)) {
      return AuthFailure::kAlgorithmNotAllowed;  // e.g. HS256 or PS256 named on an ES256 key
    }
    if (!verify_signature(*jws, key->key.get())) {
      return AuthFailure::kBadSignature;
    }
  }
  if (auto failure = check_claims(jws->claims, now)) {
    return *failure;
  }
  auto user = name_claim(jws->claims, policy_.user_claim);
  if (!user) {
    return AuthFailure::kMalformed;
  }
  VerifiedToken verified;
  verified.user = std::move(*user);
  if (policy_.tier_claim) {
    verified.tier = name_claim(jws->claims, *policy_.tier_claim);
  }
  bool bad = false;
  verified.expires = numeric_date(jws->claims, "exp", bad);
  return verified;
}

std::optional<AuthFailure> JwtVerifier::check_claims(
    const json& claims, std::chrono::system_clock::time_point now) const {
  const std::int64_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  const std::int64_t leeway = policy_.leeway.count();
  bool bad = false;
  const auto exp = numeric_date(claims, "exp", bad);
  const auto nbf = numeric_date(claims, "nbf", bad);
  if (bad) {
    return AuthFailure::kMalformed;
  }
  if (exp && seconds >= *exp + leeway) {
    return AuthFailure::kExpired;  // RFC 7519 §4.1.4: on or after exp, with the leeway
  }
  if (nbf && seconds + leeway < *nbf) {
    return AuthFailure::kNotYetValid;
  }
  if (policy_.issuer) {
    const auto iss = claims.find("iss");
    if (iss == claims.end() || !iss->is_string() || *iss != *policy_.issuer) {
      return AuthFailure::kWrongIssuer;
    }
  }
  if (!policy_.audiences.empty()) {
    const auto aud = claims.find("aud");
    const auto listed = [this](const json& value) {
      return value.is_string() &&
             std::find(policy_.audiences.begin(), policy_.audiences.end(),
                       value.get_ref<const std::string&>()) != policy_.audiences.end();
    };
    const bool ok =
        aud != claims.end() &&
        (listed(*aud) || (aud->is_array() && std::any_of(aud->begin(), aud->end(), listed)));
    if (!ok) {
      return AuthFailure::kWrongAudience;
    }
  }
  return std::nullopt;
}

}  // namespace sluice::auth
