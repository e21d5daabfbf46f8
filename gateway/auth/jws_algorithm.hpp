// SPDX-License-Identifier: Apache-2.0
#pragma once

// The JWS algorithms sluice verifies (docs/decisions/0022-jwt-reader-on-openssl.md).

#include <optional>
#include <string_view>

namespace sluice::auth {

enum class JwsAlgorithm { kES256, kES384, kRS256, kPS256, kEdDSA, kHS256 };

/// The algorithm an `alg` header names; nullopt for `none` and every name not listed above
/// (compared exactly: JOSE names are case-sensitive).
[[nodiscard]] std::optional<JwsAlgorithm> jws_algorithm(std::string_view name);

/// Its `alg` name.
[[nodiscard]] std::string_view name_of(JwsAlgorithm algorithm);

}  // namespace sluice::auth
