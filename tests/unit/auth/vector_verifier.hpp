// SPDX-License-Identifier: Apache-2.0
#pragma once

// A verifier for the tokens of jws_vectors.hpp (signed by python3-cryptography): every algorithm
// allowed, their key set and HS256 secret, the `plan` claim as the tier. For the fuzz target and
// the benchmarks, which need the vectors to verify and nothing else of the policy.

#include <memory>
#include <string>
#include <vector>

#include "gateway/auth/jwt_verifier.hpp"
#include "tests/unit/auth/jws_vectors.hpp"

namespace sluice::auth::vectors {

/// `issuer` and `audience` match the vectors' claims when given.
inline std::shared_ptr<const JwtVerifier> make_vector_verifier(bool check_issuer_and_audience) {
  std::string error;
  std::vector<std::string> skipped;
  JwtPolicy policy;
  policy.algorithms = {JwsAlgorithm::kES256, JwsAlgorithm::kES384, JwsAlgorithm::kRS256,
                       JwsAlgorithm::kPS256, JwsAlgorithm::kEdDSA, JwsAlgorithm::kHS256};
  if (check_issuer_and_audience) {
    policy.issuer = "https://id.example.com/";
    policy.audiences = {"api"};
  }
  policy.tier_claim = "plan";
  policy.hs256_secret = kHs256Secret;
  return std::make_shared<const JwtVerifier>(
      policy, std::make_shared<const JwkSet>(JwkSet::parse(kJwks, error, skipped)));
}

}  // namespace sluice::auth::vectors
