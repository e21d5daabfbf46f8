// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The `auth` and `tiers` sections and a route's `auth` (docs/identity.md). Plain values.
namespace sluice::config {

/// What a route asks of a caller's credential (docs/identity.md "Routes").
enum class RouteAuth { kOff, kOptional, kRequired };

/// "off", "optional", "required".
std::string_view to_string(RouteAuth auth);

/// `auth.jwt`: how a bearer JWT is verified.
struct JwtConfig {
  std::optional<std::string> issuer;   ///< `iss` must equal it when set
  std::vector<std::string> audiences;  ///< `aud` must name one when not empty
  std::optional<std::string> jwks_file;
  std::optional<std::string> jwks_url;  ///< https only
  std::optional<std::string> jwks_ca;   ///< PEM file for jwks_url (null: the system store)
  std::chrono::seconds jwks_refresh{300};
  std::vector<std::string> algorithms{"ES256", "RS256", "EdDSA"};
  std::optional<std::string> hs256_secret_env;  ///< HS256 only with this
  std::string user_claim = "sub";
  std::optional<std::string> tier_claim;
  std::chrono::seconds leeway{30};

  bool operator==(const JwtConfig&) const = default;
};

/// One API key as the config holds it: its SHA-256 (64 lower-case hex digits), never the key.
struct ApiKeyEntry {
  std::string sha256;
  std::string user;
  std::string tier;  ///< empty: none

  bool operator==(const ApiKeyEntry&) const = default;
};

/// `auth.api_keys`: keys read from a header, looked up by their SHA-256 among those of
/// `keys_file` and `keys` (the ones the admin API adds: docs/identity.md "API keys").
struct ApiKeysConfig {
  std::string header = "X-API-Key";
  std::optional<std::string> keys_file;
  std::vector<ApiKeyEntry> keys;

  bool operator==(const ApiKeysConfig&) const = default;
};

/// `auth.failure_policy`: an address whose credentials failed `failures` times within `window`
/// gets 429 without any verification until the window slides (docs/identity.md "Floods").
struct AuthFailurePolicyConfig {
  std::uint32_t failures = 20;
  std::chrono::milliseconds window{60000};
  std::uint32_t buckets = 10;

  bool operator==(const AuthFailurePolicyConfig&) const = default;
};

struct AuthConfig {
  std::optional<JwtConfig> jwt;
  std::optional<ApiKeysConfig> api_keys;
  /// null: no flood shedding (`"failure_policy": null`).
  std::optional<AuthFailurePolicyConfig> failure_policy = AuthFailurePolicyConfig{};

  bool operator==(const AuthConfig&) const = default;
};

/// `tiers`: policy -> tier -> requests, the tier's own limit under that policy.
using TierOverrides = std::map<std::string, std::map<std::string, std::uint32_t>>;

}  // namespace sluice::config
