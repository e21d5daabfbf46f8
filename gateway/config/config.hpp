// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/auth_config.hpp"
#include "gateway/config/backend_config.hpp"
#include "gateway/config/endpoint.hpp"
#include "gateway/config/listener_config.hpp"

// The validated configuration (docs/behaviour.md "Configuration"). Plain value types: build one
// with config::parse_config / load_config_file (config_loader.hpp), which fills every field and
// applies the defaults written below, then share it as std::shared_ptr<const Config>.
// Thread-safety: none inside; a published Config is never mutated, so any number of threads may
// read it concurrently. A reload or an admin change builds a new Config and swaps the pointer.
namespace sluice::config {

using LimitMode = EnforcementMode;
enum class StoreType { kMemory, kRedis };
/// What the limiter does while Redis is unreachable or slow (docs/behaviour.md "Configuration",
/// `on_error`).
enum class OnError { kLocal, kLocalShare, kAllow, kDeny };
/// How the Redis store decides (docs/distributed.md): every decision in Redis (`exact`), or
/// locally with per-key deltas exchanged every `sync_ms` (`hybrid`).
enum class StoreMode { kExact, kHybrid };
/// Whose X-Request-Id a request keeps (docs/behaviour.md "Request ids", `http.request_id`).
enum class RequestIdPolicy { kPreserve, kTrusted, kReplace };

/// The JSON spellings: "round_robin", "shadow", "redis", "local_share", ...
std::string_view to_string(StoreType type);
std::string_view to_string(OnError on_error);
std::string_view to_string(StoreMode mode);
std::string_view to_string(RequestIdPolicy policy);

struct AdminConfig {
  std::string address = "127.0.0.1";
  std::uint16_t port = 9901;
  std::optional<std::string> token_env;  // name of the env var holding the bearer token
  bool persist = false;                  // write admin changes back to the config file
  bool top_users = true;  // heavy-hitter sketches per policy (docs/operating.md "Heavy hitters")

  bool operator==(const AdminConfig&) const = default;
};

struct HttpConfig {
  std::uint64_t max_header_bytes = 16384;
  std::uint64_t max_body_bytes = 10485760;
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds idle_timeout{60000};
  std::uint32_t max_connections = 10000;
  std::vector<Cidr> trusted_proxies;  // X-Forwarded-For is honoured only from these peers
  bool merge_slashes = true;          // path normalization merges runs of '/' (docs/paths.md)
  std::chrono::milliseconds tunnel_idle_timeout{300000};  // upgrades (docs/upgrades.md)
  RequestIdPolicy request_id = RequestIdPolicy::kPreserve;

  bool operator==(const HttpConfig&) const = default;
};

struct AccessLogConfig {
  bool enabled = true;
  std::string path = "-";  // "-" = stdout
  /// Name of the env var holding the secret of the `user` hash (null: random per process).
  std::optional<std::string> user_hash_key_env;

  bool operator==(const AccessLogConfig&) const = default;
};

/// One way to name the user a request is limited as; the first source that yields a value wins.
struct IdentitySource {
  /// kJwt and kApiKey yield only a verified credential's user (docs/identity.md).
  enum class Kind { kHeader, kBearer, kClientIp, kClientCert, kJwt, kApiKey };
  /// Which name of a verified client certificate kClientCert yields.
  enum class CertName { kSubjectCn, kSanDns, kSanUri };
  Kind kind = Kind::kClientIp;
  std::string header;  // only for kHeader: the header name as written in config
  CertName cert_name = CertName::kSubjectCn;  // only for kClientCert

  bool operator==(const IdentitySource&) const = default;
};

std::string_view to_string(IdentitySource::CertName name);

struct RedisConfig {
  std::string host = "127.0.0.1";  // IP literal or host name
  std::uint16_t port = 6379;
  std::optional<std::string> password_env;  // name of the env var holding the password
  std::chrono::milliseconds timeout{50};
  OnError on_error = OnError::kLocalShare;
  StoreMode mode = StoreMode::kExact;
  std::chrono::milliseconds sync{100};  // `sync_ms`: hybrid mode's exchange period

  bool operator==(const RedisConfig&) const = default;
};

struct StoreConfig {
  StoreType type = StoreType::kMemory;
  std::uint64_t max_keys = 1000000;
  RedisConfig redis;  // meaningful only for kRedis (defaults otherwise)

  bool operator==(const StoreConfig&) const = default;
};

/// `fleet` (docs/fleet.md): replicas that share the config's shared part through the store's
/// Redis. Local to each replica (never part of what the fleet shares).
struct FleetConfig {
  bool enabled = false;
  std::string name = "default";           // namespaces every key: fleets may share one Redis
  std::optional<std::string> replica_id;  // null: the host name and a random suffix
  std::chrono::milliseconds sync_timeout{1000};
  std::chrono::milliseconds heartbeat{1000};

  bool operator==(const FleetConfig&) const = default;
};

/// `requests` per `window` in `buckets` equal sub-windows; window % buckets == 0 (in ms).
struct LimitPolicyConfig {
  std::uint32_t requests = 0;           // required in JSON
  std::chrono::milliseconds window{0};  // required in JSON
  std::uint32_t buckets = 10;
  LimitMode mode = LimitMode::kEnforce;

  bool operator==(const LimitPolicyConfig&) const = default;
};

/// A route; `backend` names a key of Config::backends and `limit` one of Config::limits.
struct RouteConfig {
  std::string name;
  std::string prefix;  // starts with "/"
  std::string backend;
  std::optional<std::string> limit;
  std::vector<std::string> methods;  // empty = any method
  std::optional<std::string> host;
  bool strip_prefix = false;
  bool upgrades = true;              // forward Upgrade requests as tunnels (docs/upgrades.md)
  RouteAuth auth = RouteAuth::kOff;  // docs/identity.md "Routes"
  bool strip_credentials = false;    // Authorization and the API key header are not forwarded

  bool operator==(const RouteConfig&) const = default;
};

struct Config {
  std::vector<ListenerConfig> listeners{ListenerConfig{}};  // at least one, names unique
  AdminConfig admin;
  std::uint32_t threads = 0;  // 0 = one per core
  std::chrono::milliseconds drain_timeout{10000};
  bool config_watch = false;  // re-read the file when it changes (docs/behaviour.md)
  HttpConfig http;
  AccessLogConfig access_log;
  std::vector<IdentitySource> identity{IdentitySource{IdentitySource::Kind::kClientIp, {}}};
  AuthConfig auth;
  StoreConfig store;
  FleetConfig fleet;
  std::map<std::string, LimitPolicyConfig> limits;
  std::map<std::string, std::map<std::string, std::uint32_t>>
      overrides;        // policy -> key -> requests
  TierOverrides tiers;  // policy -> tier -> requests
  std::map<std::string, BackendConfig> backends;
  std::vector<RouteConfig> routes;  // in match order

  bool operator==(const Config&) const = default;
};

}  // namespace sluice::config
