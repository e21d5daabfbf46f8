// SPDX-License-Identifier: Apache-2.0
#pragma once

// Internal to the config module: one parser per top-level section of the document, used by
// config_loader.cpp. Each reads its section from the root reader (consuming the key), applies
// the defaults of config.hpp, reports problems through the reader and returns what it could read.
// Stateless functions; safe to call from any thread on distinct readers.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/config/json_reader.hpp"
#include "gateway/config/problems.hpp"

namespace sluice::config::detail {

/// Keys of a section that others refer to by name (`backends`, `limits`). std::nullopt when the
/// section itself is malformed: then references to it are not checked.
using KnownNames = std::optional<std::set<std::string, std::less<>>>;

// listener_sections.cpp: `listen` (one listener named "default") or `listeners`, never both.
std::vector<ListenerConfig> parse_listeners(ObjectReader& root);

// config_sections.cpp: the rest of the server side.
AdminConfig parse_admin(ObjectReader& root);
HttpConfig parse_http(ObjectReader& root);
AccessLogConfig parse_access_log(ObjectReader& root);
std::vector<IdentitySource> parse_identity(ObjectReader& root);
// auth_sections.cpp: `auth` and `tiers` (docs/identity.md).
AuthConfig parse_auth(ObjectReader& root);
TierOverrides parse_tiers(ObjectReader& root, const KnownNames& policies);
StoreConfig parse_store(ObjectReader& root);
/// `fleet`; needs store.type redis when enabled (`store` parsed first).
FleetConfig parse_fleet(ObjectReader& root, const StoreConfig& store);

// traffic_sections.cpp: policies, backends and routes.
std::map<std::string, LimitPolicyConfig> parse_limits(ObjectReader& root);
std::map<std::string, std::map<std::string, std::uint32_t>> parse_overrides(
    ObjectReader& root, const KnownNames& policies);
/// Section `section_key` as policy -> name -> {"requests": N} (0..2^32-1): `overrides` (names
/// are user keys) and `tiers` (names are tiers). Each policy must be in `policies`; an empty
/// name is reported with `empty_name`.
std::map<std::string, std::map<std::string, std::uint32_t>> parse_requests_by_policy(
    ObjectReader& root, std::string_view section_key, const KnownNames& policies,
    std::string_view empty_name);
/// `overrides` read in place from a document kept in order, when every policy in it is an
/// object and every entry is exactly {"requests": N} with N in range under a non-empty key (what
/// parse_overrides accepts without a problem); nullopt otherwise. Policy names are not checked
/// here: parse_overrides checks them.
std::optional<std::map<std::string, std::map<std::string, std::uint32_t>>> read_plain_overrides(
    const nlohmann::ordered_json& section);
std::map<std::string, BackendConfig> parse_backends(ObjectReader& root);
/// `merge_slashes` is http.merge_slashes: a prefix must be a path in normal form under it.
std::vector<RouteConfig> parse_routes(ObjectReader& root, bool merge_slashes,
                                      const KnownNames& backends, const KnownNames& policies);

// health_sections.cpp: a backend's `health_check`, `outlier` and `retry` objects.
HealthCheckConfig parse_health_check(ObjectReader& reader);
OutlierConfig parse_outlier(ObjectReader& reader);
RetryConfig parse_retry(ObjectReader& reader);

// Shared rules.
inline constexpr std::string_view kInvalidName =
    "invalid name: use 1-64 characters from A-Z a-z 0-9 _ -";

/// A policy, backend or route name: 1..64 characters of [A-Za-z0-9_-].
bool is_valid_name(std::string_view name);
/// An RFC 9110 token (1*tchar): header names and methods.
bool is_http_token(std::string_view text);
/// An environment variable name: [A-Za-z_][A-Za-z0-9_]*.
bool is_env_name(std::string_view text);

/// ASCII letters and digits.
bool is_alpha(char c);
bool is_digit(char c);
/// An IPv4/IPv6 literal string member; the text as written, or std::nullopt after a problem.
std::optional<std::string> read_ip_literal(ObjectReader& reader, std::string_view key);

/// Calls `fn(reader, path)` with a reader for each element of the array `key` of `root` that is
/// an object (finished afterwards), and reports the elements that are not.
template <typename Fn>
void for_each_object(ObjectReader& root, std::string_view key, const nlohmann::json& list,
                     Fn&& fn) {
  const auto list_path = root.path_of(key);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto path = element_path(list_path, i);
    if (!list[i].is_object()) {
      root.problems().add(path, "must be an object");
      continue;
    }
    ObjectReader reader(list[i], path, root.problems());
    fn(reader, path);
    reader.finish();
  }
}

/// Reports at `buckets` unless `buckets` divides `window` (ms) evenly. `window` or `buckets` is
/// std::nullopt when it was present but invalid (nothing to check); an absent `buckets` member
/// means `default_buckets` and says so in the message.
void check_buckets_divide(ObjectReader& reader, std::optional<std::chrono::milliseconds> window,
                          std::optional<std::uint32_t> buckets, std::uint32_t default_buckets);

}  // namespace sluice::config::detail
