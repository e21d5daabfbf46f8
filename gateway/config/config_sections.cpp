// SPDX-License-Identifier: Apache-2.0
// Server-side sections: listen, admin, http, access_log, identity, store; plus the shared rules.
#include "gateway/config/config_sections.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "gateway/config/endpoint.hpp"

namespace sluice::config::detail {
namespace {

using std::chrono::milliseconds;

constexpr std::array kStoreTypes{StoreType::kMemory, StoreType::kRedis};
constexpr std::array kOnErrors{OnError::kLocal, OnError::kLocalShare, OnError::kAllow,
                               OnError::kDeny};
constexpr std::array kRequestIdPolicies{RequestIdPolicy::kPreserve, RequestIdPolicy::kTrusted,
                                        RequestIdPolicy::kReplace};
constexpr std::array kCertNames{IdentitySource::CertName::kSubjectCn,
                                IdentitySource::CertName::kSanDns,
                                IdentitySource::CertName::kSanUri};
constexpr std::array kStoreModes{StoreMode::kExact, StoreMode::kHybrid};
constexpr std::array<std::string_view, 7> kRedisOnlyFields{
    "host", "port", "password_env", "timeout_ms", "on_error", "mode", "sync_ms"};
constexpr std::string_view kEnvNameMessage =
    "must be an environment variable name (letters, digits and _, not starting with a digit)";

// A member naming an environment variable, or null.
std::optional<std::string> read_env_name(ObjectReader& reader, std::string_view key) {
  auto name = reader.nullable_string(key);
  if (name && !is_env_name(*name)) {
    reader.report(key, std::string(kEnvNameMessage));
    return std::nullopt;
  }
  return name;
}

std::vector<Cidr> parse_trusted_proxies(ObjectReader& reader) {
  std::vector<Cidr> proxies;
  const auto* list = reader.array("trusted_proxies");
  if (list == nullptr) {
    return proxies;
  }
  const auto list_path = reader.path_of("trusted_proxies");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto path = element_path(list_path, i);
    const auto text = read_string((*list)[i], path, reader.problems());
    if (!text) {
      continue;
    }
    auto cidr = parse_cidr(*text);
    if (cidr.ok()) {
      proxies.push_back(*cidr.value);
    } else {
      reader.problems().add(path, std::move(cidr.error));
    }
  }
  return proxies;
}

// One element of `identity`: exactly one of {"header": NAME}, {"bearer": true},
// {"client_ip": true}, {"client_cert": "subject_cn" | "san_dns" | "san_uri"}, {"jwt": true},
// {"api_key": true}.
std::optional<IdentitySource> parse_identity_source(ObjectReader& reader) {
  using Kind = IdentitySource::Kind;
  constexpr std::array kKeys{"header", "bearer", "client_ip", "client_cert", "jwt", "api_key"};
  const auto count =
      std::count_if(kKeys.begin(), kKeys.end(), [&](const char* key) { return reader.has(key); });
  if (count != 1) {
    for (const auto* key : kKeys) {
      reader.take(key);
    }
    reader.problems().add(
        reader.path(),
        R"(must have exactly one of "header", "bearer", "client_ip", "client_cert", "jwt", )"
        R"("api_key")");
    return std::nullopt;
  }
  if (reader.has("client_cert")) {
    const auto name = reader.enumeration("client_cert", kCertNames);
    return name ? std::optional(IdentitySource{Kind::kClientCert, {}, *name}) : std::nullopt;
  }
  if (reader.has("header")) {
    auto name = reader.string("header");
    if (name && !is_http_token(*name)) {
      reader.report("header", R"(must be an HTTP header name (e.g. "X-API-Key"))");
      return std::nullopt;
    }
    return name ? std::optional(IdentitySource{Kind::kHeader, std::move(*name)}) : std::nullopt;
  }
  constexpr std::array kFlags{std::pair{std::string_view("bearer"), Kind::kBearer},
                              std::pair{std::string_view("jwt"), Kind::kJwt},
                              std::pair{std::string_view("api_key"), Kind::kApiKey},
                              std::pair{std::string_view("client_ip"), Kind::kClientIp}};
  const auto* flag = std::find_if(kFlags.begin(), kFlags.end(),
                                  [&](const auto& f) { return reader.has(f.first); });
  const auto enabled = reader.boolean(flag->first);
  if (enabled && !*enabled) {
    reader.report(flag->first, "must be true (remove the source to disable it)");
  }
  if (!enabled.value_or(false)) {
    return std::nullopt;
  }
  return IdentitySource{flag->second, {}};
}

bool same_source(const IdentitySource& a, const IdentitySource& b) {
  // Header names are case-insensitive (RFC 9110 §5.1).
  return a.kind == b.kind && a.cert_name == b.cert_name &&
         std::equal(a.header.begin(), a.header.end(), b.header.begin(), b.header.end(),
                    [](char x, char y) {
                      return std::tolower(static_cast<unsigned char>(x)) ==
                             std::tolower(static_cast<unsigned char>(y));
                    });
}

RedisConfig parse_redis(ObjectReader& reader) {
  RedisConfig redis;
  if (auto host = reader.string("host")) {
    if (parse_ip_address(*host) || is_host_name(*host)) {
      redis.host = std::move(*host);
    } else {
      reader.report("host", "must be an IP address or host name");
    }
  }
  redis.port = reader.integer<std::uint16_t>("port", 1, 65535).value_or(redis.port);
  redis.password_env = read_env_name(reader, "password_env");
  redis.timeout = reader.duration_ms("timeout_ms", 1, 60000).value_or(redis.timeout);
  redis.on_error = reader.enumeration("on_error", kOnErrors).value_or(redis.on_error);
  redis.mode = reader.enumeration("mode", kStoreModes).value_or(redis.mode);
  redis.sync = reader.duration_ms("sync_ms", 2, 60000).value_or(redis.sync);
  return redis;
}

}  // namespace

bool is_alpha(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// An IPv4/IPv6 literal string member; the text as written, or std::nullopt after a problem.
std::optional<std::string> read_ip_literal(ObjectReader& reader, std::string_view key) {
  auto text = reader.string(key);
  if (text && !parse_ip_address(*text)) {
    reader.report(key, "must be an IPv4 or IPv6 address");
    return std::nullopt;
  }
  return text;
}

AdminConfig parse_admin(ObjectReader& root) {
  AdminConfig admin;
  root.nested("admin", [&](ObjectReader& reader) {
    admin.address = read_ip_literal(reader, "address").value_or(admin.address);
    admin.port = reader.integer<std::uint16_t>("port", 0, 65535).value_or(admin.port);
    const std::size_t problems_before = reader.problems().size();
    admin.token_env = read_env_name(reader, "token_env");
    const bool token_is_null = !admin.token_env && reader.problems().size() == problems_before;
    admin.persist = reader.boolean("persist").value_or(admin.persist);
    admin.top_users = reader.boolean("top_users").value_or(admin.top_users);
    // docs/behaviour.md "Admin API": without a token the admin API is open, so it may only listen
    // on loopback.
    const auto address = parse_ip_address(admin.address);
    if (token_is_null && address && !address->is_loopback()) {
      reader.report("address",
                    "must be a loopback address while admin.token_env is null (the admin API "
                    "would be open to the network)");
    }
  });
  return admin;
}

HttpConfig parse_http(ObjectReader& root) {
  HttpConfig http;
  root.nested("http", [&](ObjectReader& reader) {
    http.max_header_bytes = reader.integer<std::uint64_t>("max_header_bytes", 1024, 1048576)
                                .value_or(http.max_header_bytes);
    http.max_body_bytes = reader.integer<std::uint64_t>("max_body_bytes", 0, 1099511627776)
                              .value_or(http.max_body_bytes);
    http.header_timeout =
        reader.duration_ms("header_timeout_ms", 1, 3600000).value_or(http.header_timeout);
    http.idle_timeout =
        reader.duration_ms("idle_timeout_ms", 1, 86400000).value_or(http.idle_timeout);
    http.max_connections =
        reader.integer<std::uint32_t>("max_connections", 1, 1000000).value_or(http.max_connections);
    http.trusted_proxies = parse_trusted_proxies(reader);
    http.merge_slashes = reader.boolean("merge_slashes").value_or(http.merge_slashes);
    http.tunnel_idle_timeout = reader.duration_ms("tunnel_idle_timeout_ms", 1, 86400000)
                                   .value_or(http.tunnel_idle_timeout);
    http.request_id =
        reader.enumeration("request_id", kRequestIdPolicies).value_or(http.request_id);
  });
  return http;
}

AccessLogConfig parse_access_log(ObjectReader& root) {
  AccessLogConfig access_log;
  root.nested("access_log", [&](ObjectReader& reader) {
    access_log.enabled = reader.boolean("enabled").value_or(access_log.enabled);
    if (auto path = reader.string("path")) {
      if (path->empty()) {
        reader.report("path", R"(must not be empty (use "-" for stdout))");
      } else {
        access_log.path = std::move(*path);
      }
    }
    access_log.user_hash_key_env = read_env_name(reader, "user_hash_key_env");
  });
  return access_log;
}

std::vector<IdentitySource> parse_identity(ObjectReader& root) {
  const auto* list = root.array("identity");
  if (list == nullptr) {
    return Config{}.identity;
  }
  if (list->empty()) {
    root.report("identity", "must name at least one source");
    return Config{}.identity;
  }
  std::vector<IdentitySource> sources;
  for_each_object(root, "identity", *list, [&](ObjectReader& reader, const std::string& path) {
    auto source = parse_identity_source(reader);
    if (!source) {
      return;
    }
    const auto same = [&](const IdentitySource& s) { return same_source(s, *source); };
    if (std::any_of(sources.begin(), sources.end(), same)) {
      root.problems().add(path, "duplicate identity source");
    } else {
      sources.push_back(std::move(*source));
    }
  });
  return sources;
}

StoreConfig parse_store(ObjectReader& root) {
  StoreConfig store;
  root.nested("store", [&](ObjectReader& reader) {
    const auto type = reader.enumeration("type", kStoreTypes);
    const bool type_is_bad = reader.has("type") && !type;
    store.type = type.value_or(store.type);
    store.max_keys =
        reader.integer<std::uint64_t>("max_keys", 1, 1000000000).value_or(store.max_keys);
    if (store.type == StoreType::kRedis || type_is_bad) {
      store.redis = parse_redis(reader);  // a bad type: still check the redis fields themselves
      return;
    }
    for (const auto key : kRedisOnlyFields) {
      if (reader.take(key) != nullptr) {
        reader.report(key, R"(only valid when store.type is "redis")");
      }
    }
  });
  return store;
}

FleetConfig parse_fleet(ObjectReader& root, const StoreConfig& store) {
  FleetConfig fleet;
  root.nested("fleet", [&](ObjectReader& reader) {
    fleet.enabled = reader.boolean("enabled").value_or(fleet.enabled);
    if (auto name = reader.string("name")) {
      if (is_valid_name(*name)) {
        fleet.name = std::move(*name);
      } else {
        reader.report("name", "must be 1-64 letters, digits, '-' or '_'");
      }
    }
    if (auto id = reader.nullable_string("replica_id")) {
      if (is_valid_name(*id)) {
        fleet.replica_id = std::move(*id);
      } else {
        reader.report("replica_id", "must be 1-64 letters, digits, '-' or '_'");
      }
    }
    fleet.sync_timeout =
        reader.duration_ms("sync_timeout_ms", 50, 60000).value_or(fleet.sync_timeout);
    fleet.heartbeat = reader.duration_ms("heartbeat_ms", 100, 60000).value_or(fleet.heartbeat);
    if (fleet.enabled && store.type != StoreType::kRedis) {
      reader.report("enabled", R"(needs store.type "redis" (the fleet shares the store's Redis))");
    }
  });
  return fleet;
}

bool is_valid_name(std::string_view name) {
  constexpr std::size_t kMaxNameLength = 64;
  return !name.empty() && name.size() <= kMaxNameLength &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '-'; });
}

bool is_http_token(std::string_view text) {
  constexpr std::string_view kTcharSymbols = "!#$%&'*+-.^_`|~";
  return !text.empty() && std::all_of(text.begin(), text.end(), [&](char c) {
    return is_alpha(c) || is_digit(c) || kTcharSymbols.find(c) != std::string_view::npos;
  });
}

bool is_env_name(std::string_view text) {
  return !text.empty() && !is_digit(text.front()) &&
         std::all_of(text.begin(), text.end(),
                     [](char c) { return is_alpha(c) || is_digit(c) || c == '_'; });
}

void check_buckets_divide(ObjectReader& reader, std::optional<milliseconds> window,
                          std::optional<std::uint32_t> buckets, std::uint32_t default_buckets) {
  const bool defaulted = !reader.has("buckets");
  if (!window || (!buckets && !defaulted)) {
    return;
  }
  const auto count = buckets.value_or(default_buckets);
  if (window->count() % count == 0) {
    return;
  }
  std::string message = "must divide window_ms (" + std::to_string(window->count()) + ") evenly";
  if (defaulted) {
    message += " (buckets defaults to " + std::to_string(default_buckets) + ")";
  }
  reader.report("buckets", std::move(message));
}

}  // namespace sluice::config::detail
