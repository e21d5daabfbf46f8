// SPDX-License-Identifier: Apache-2.0
// The identity sections: `auth` (JWT, API keys, the failure policy) and `tiers`
// (docs/identity.md).
#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <utility>

#include "gateway/config/config_sections.hpp"

namespace sluice::config::detail {
namespace {

using std::chrono::seconds;

/// The algorithms sluice verifies (docs/identity.md "JWT"); `none` is never one of them.
constexpr std::array<std::string_view, 6> kAlgorithms{"ES256", "ES384", "RS256",
                                                      "PS256", "EdDSA", "HS256"};

/// Calls `fn(reader)` on member `key` when it is an object. Returns false when the member is
/// absent (the default stays), true when it is null (the section is off) or was read.
template <typename Fn>
bool nullable_section(ObjectReader& reader, std::string_view key, Fn&& fn) {
  const auto* value = reader.take(key);
  if (value == nullptr) {
    return false;
  }
  if (value->is_object()) {
    ObjectReader section(*value, reader.path_of(key), reader.problems());
    fn(section);
    section.finish();
  } else if (!value->is_null()) {
    reader.report(key, "must be an object or null");
  }
  return true;
}

std::vector<std::string> string_list(ObjectReader& reader, std::string_view key) {
  std::vector<std::string> out;
  const auto* list = reader.array(key);
  if (list == nullptr) {
    return out;
  }
  const auto list_path = reader.path_of(key);
  for (std::size_t i = 0; i < list->size(); ++i) {
    if (auto text = read_string((*list)[i], element_path(list_path, i), reader.problems())) {
      if (text->empty()) {
        reader.problems().add(element_path(list_path, i), "must not be empty");
      } else {
        out.push_back(std::move(*text));
      }
    }
  }
  return out;
}

std::vector<std::string> read_algorithms(ObjectReader& reader) {
  const bool given = reader.has("algorithms");
  const auto list_path = reader.path_of("algorithms");
  auto names = string_list(reader, "algorithms");
  if (!given) {
    return JwtConfig{}.algorithms;
  }
  if (names.empty()) {
    reader.problems().add(list_path, "must list at least one algorithm");
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (std::find(kAlgorithms.begin(), kAlgorithms.end(), names[i]) == kAlgorithms.end()) {
      reader.problems().add(element_path(list_path, i),
                            R"(must be one of "ES256", "ES384", "RS256", "PS256", "EdDSA", )"
                            R"("HS256" ("none" is never accepted))");
    }
  }
  return names;
}

std::optional<std::string> read_env(ObjectReader& reader, std::string_view key) {
  auto name = reader.nullable_string(key);
  if (name && !is_env_name(*name)) {
    reader.report(key, "must be an environment variable name");
    return std::nullopt;
  }
  return name;
}

JwtConfig parse_jwt(ObjectReader& reader) {
  JwtConfig jwt;
  jwt.issuer = reader.nullable_string("issuer");
  if (jwt.issuer && jwt.issuer->empty()) {
    reader.report("issuer", "must not be empty (use null to accept any issuer)");
  }
  jwt.audiences = string_list(reader, "audiences");
  jwt.jwks_file = reader.nullable_string("jwks_file");
  jwt.jwks_url = reader.nullable_string("jwks_url");
  jwt.jwks_ca = reader.nullable_string("jwks_ca");
  const auto refresh = reader.integer<std::int64_t>("jwks_refresh_s", 10, 86400);
  jwt.jwks_refresh = refresh ? seconds(*refresh) : jwt.jwks_refresh;
  jwt.algorithms = read_algorithms(reader);
  jwt.hs256_secret_env = read_env(reader, "hs256_secret_env");
  if (auto claim = reader.string("user_claim")) {
    if (claim->empty()) {
      reader.report("user_claim", "must not be empty");
    } else {
      jwt.user_claim = std::move(*claim);
    }
  }
  jwt.tier_claim = reader.nullable_string("tier_claim");
  const auto leeway = reader.integer<std::int64_t>("leeway_s", 0, 3600);
  jwt.leeway = leeway ? seconds(*leeway) : jwt.leeway;

  const auto lists = [&](std::string_view name) {
    return std::find(jwt.algorithms.begin(), jwt.algorithms.end(), name) != jwt.algorithms.end();
  };
  const bool hs256 = lists("HS256");
  if (hs256 && !jwt.hs256_secret_env) {
    reader.problems().add(reader.path_of("algorithms"), "HS256 needs hs256_secret_env");
  }
  if (!hs256 && jwt.hs256_secret_env) {
    reader.problems().add(reader.path_of("hs256_secret_env"),
                          R"(is set but "HS256" is not in algorithms)");
  }
  const bool asymmetric = std::any_of(jwt.algorithms.begin(), jwt.algorithms.end(),
                                      [](const std::string& name) { return name != "HS256"; });
  if (jwt.jwks_file && jwt.jwks_url) {
    reader.problems().add(reader.path(), "set one of jwks_file and jwks_url, not both");
  } else if (asymmetric && !jwt.jwks_file && !jwt.jwks_url) {
    reader.problems().add(reader.path(),
                          "needs jwks_file or jwks_url for the public-key algorithms listed");
  }
  if (jwt.jwks_url && !jwt.jwks_url->starts_with("https://")) {
    reader.report("jwks_url", "must be an https:// URL");
  }
  if (jwt.jwks_ca && !jwt.jwks_url) {
    reader.report("jwks_ca", "only valid with jwks_url");
  }
  return jwt;
}

ApiKeysConfig parse_api_keys(ObjectReader& reader) {
  ApiKeysConfig keys;
  if (auto header = reader.string("header")) {
    if (!is_http_token(*header)) {
      reader.report("header", R"(must be an HTTP header name (e.g. "X-API-Key"))");
    } else {
      keys.header = std::move(*header);
    }
  }
  keys.keys_file = reader.nullable_string("keys_file");
  if (keys.keys_file && keys.keys_file->empty()) {
    reader.report("keys_file", "must not be empty (use null for none)");
  }
  const auto* list = reader.array("keys");
  const auto list_path = reader.path_of("keys");
  for (std::size_t i = 0; list != nullptr && i < list->size(); ++i) {
    const auto path = element_path(list_path, i);
    if (!(*list)[i].is_object()) {
      reader.problems().add(path, "must be an object");
      continue;
    }
    ObjectReader entry((*list)[i], path, reader.problems());
    ApiKeyEntry key;
    key.sha256 = entry.string("sha256", Presence::kRequired).value_or("");
    key.user = entry.string("user", Presence::kRequired).value_or("");
    key.tier = entry.nullable_string("tier").value_or("");
    entry.finish();
    const bool hex = key.sha256.size() == 64 &&
                     key.sha256.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (!hex) {
      reader.problems().add(path + ".sha256", "must be 64 lower-case hex digits");
    } else if (std::any_of(keys.keys.begin(), keys.keys.end(),
                           [&](const ApiKeyEntry& k) { return k.sha256 == key.sha256; })) {
      reader.problems().add(path + ".sha256", "the same key is listed twice");
    }
    if (key.user.empty()) {
      reader.problems().add(path + ".user", "must not be empty");
    }
    keys.keys.push_back(std::move(key));
  }
  return keys;
}

AuthFailurePolicyConfig parse_failure_policy(ObjectReader& reader) {
  AuthFailurePolicyConfig policy;
  policy.failures =
      reader.integer<std::uint32_t>("failures", 1, 1'000'000).value_or(policy.failures);
  const auto window = reader.duration_ms("window_ms", 1000, 3'600'000);
  const auto buckets = reader.integer<std::uint32_t>("buckets", 1, 3600);
  check_buckets_divide(reader, window, buckets, policy.buckets);
  policy.window = window.value_or(policy.window);
  policy.buckets = buckets.value_or(policy.buckets);
  return policy;
}

}  // namespace

AuthConfig parse_auth(ObjectReader& root) {
  AuthConfig auth;
  root.nested("auth", [&](ObjectReader& reader) {
    nullable_section(reader, "jwt", [&](ObjectReader& r) { auth.jwt = parse_jwt(r); });
    nullable_section(reader, "api_keys",
                     [&](ObjectReader& r) { auth.api_keys = parse_api_keys(r); });
    if (reader.has("failure_policy")) {
      auth.failure_policy.reset();
      nullable_section(reader, "failure_policy",
                       [&](ObjectReader& r) { auth.failure_policy = parse_failure_policy(r); });
    }
  });
  return auth;
}

TierOverrides parse_tiers(ObjectReader& root, const KnownNames& policies) {
  return parse_requests_by_policy(root, "tiers", policies, "empty tier name");
}

}  // namespace sluice::config::detail
