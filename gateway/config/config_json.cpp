// SPDX-License-Identifier: Apache-2.0
#include "gateway/config/config_json.hpp"

namespace sluice::config {
namespace {

using nlohmann::json;

// null for an absent optional string.
json optional_string(const std::optional<std::string>& value) {
  return value ? json(*value) : json(nullptr);
}

json identity_json(const std::vector<IdentitySource>& sources) {
  json list = json::array();
  for (const auto& source : sources) {
    switch (source.kind) {
      case IdentitySource::Kind::kHeader:
        list.push_back({{"header", source.header}});
        break;
      case IdentitySource::Kind::kBearer:
        list.push_back({{"bearer", true}});
        break;
      case IdentitySource::Kind::kClientIp:
        list.push_back({{"client_ip", true}});
        break;
      case IdentitySource::Kind::kClientCert:
        list.push_back({{"client_cert", to_string(source.cert_name)}});
        break;
      case IdentitySource::Kind::kJwt:
        list.push_back({{"jwt", true}});
        break;
      case IdentitySource::Kind::kApiKey:
        list.push_back({{"api_key", true}});
        break;
    }
  }
  return list;
}

json store_json(const StoreConfig& store) {
  json out{{"type", to_string(store.type)}, {"max_keys", store.max_keys}};
  if (store.type == StoreType::kRedis) {
    out["host"] = store.redis.host;
    out["port"] = store.redis.port;
    out["password_env"] = optional_string(store.redis.password_env);
    out["timeout_ms"] = store.redis.timeout.count();
    out["on_error"] = to_string(store.redis.on_error);
    out["mode"] = to_string(store.redis.mode);
    out["sync_ms"] = store.redis.sync.count();
  }
  return out;
}

json http_json(const HttpConfig& http) {
  json proxies = json::array();
  for (const auto& cidr : http.trusted_proxies) {
    proxies.push_back(to_string(cidr));
  }
  return {{"max_header_bytes", http.max_header_bytes},
          {"max_body_bytes", http.max_body_bytes},
          {"header_timeout_ms", http.header_timeout.count()},
          {"idle_timeout_ms", http.idle_timeout.count()},
          {"max_connections", http.max_connections},
          {"trusted_proxies", std::move(proxies)},
          {"merge_slashes", http.merge_slashes},
          {"tunnel_idle_timeout_ms", http.tunnel_idle_timeout.count()},
          {"request_id", to_string(http.request_id)}};
}

json auth_json(const AuthConfig& auth) {
  json out = json::object();
  if (auth.jwt) {
    const JwtConfig& jwt = *auth.jwt;
    out["jwt"] = {{"issuer", optional_string(jwt.issuer)},
                  {"audiences", jwt.audiences},
                  {"jwks_file", optional_string(jwt.jwks_file)},
                  {"jwks_url", optional_string(jwt.jwks_url)},
                  {"jwks_ca", optional_string(jwt.jwks_ca)},
                  {"jwks_refresh_s", jwt.jwks_refresh.count()},
                  {"algorithms", jwt.algorithms},
                  {"hs256_secret_env", optional_string(jwt.hs256_secret_env)},
                  {"user_claim", jwt.user_claim},
                  {"tier_claim", optional_string(jwt.tier_claim)},
                  {"leeway_s", jwt.leeway.count()}};
  } else {
    out["jwt"] = nullptr;
  }
  if (auth.api_keys) {
    json keys = json::array();
    for (const ApiKeyEntry& key : auth.api_keys->keys) {
      keys.push_back({{"sha256", key.sha256},
                      {"user", key.user},
                      {"tier", key.tier.empty() ? json(nullptr) : json(key.tier)}});
    }
    out["api_keys"] = {{"header", auth.api_keys->header},
                       {"keys_file", optional_string(auth.api_keys->keys_file)},
                       {"keys", std::move(keys)}};
  } else {
    out["api_keys"] = nullptr;
  }
  out["failure_policy"] = auth.failure_policy
                              ? json{{"failures", auth.failure_policy->failures},
                                     {"window_ms", auth.failure_policy->window.count()},
                                     {"buckets", auth.failure_policy->buckets}}
                              : json(nullptr);
  return out;
}

json tiers_json(const Config& config) {
  json out = json::object();
  for (const auto& [policy, tiers] : config.tiers) {
    json& entries = out[policy] = json::object();
    for (const auto& [tier, requests] : tiers) {
      entries[tier] = {{"requests", requests}};
    }
  }
  return out;
}

json overrides_json(const Config& config) {
  json out = json::object();
  for (const auto& [policy, keys] : config.overrides) {
    json& entries = out[policy] = json::object();
    for (const auto& [key, requests] : keys) {
      entries[key] = {{"requests", requests}};
    }
  }
  return out;
}

json listeners_json(const std::vector<ListenerConfig>& listeners) {
  json list = json::array();
  for (const auto& listener : listeners) {
    json item = {{"name", listener.name},
                 {"address", listener.address},
                 {"port", listener.port},
                 {"redirect_to_https", listener.redirect_to_https},
                 {"proxy_protocol", listener.proxy_protocol},
                 {"http2",
                  {{"enabled", listener.http2.enabled},
                   {"max_concurrent_streams", listener.http2.max_concurrent_streams},
                   {"max_stream_resets", listener.http2.max_stream_resets}}}};
    if (listener.tls) {
      json certificates = json::array();
      for (const auto& cert : listener.tls->certificates) {
        certificates.push_back({{"cert", cert.cert},
                                {"key", cert.key},
                                {"server_names", cert.server_names},
                                {"ocsp", optional_string(cert.ocsp)}});
      }
      item["tls"] = {{"certificates", std::move(certificates)},
                     {"min_version", listener.tls->min_version},
                     {"ciphers", listener.tls->ciphers},
                     {"ciphersuites", listener.tls->ciphersuites},
                     {"groups", listener.tls->groups},
                     {"alpn", listener.tls->alpn},
                     {"client_ca", optional_string(listener.tls->client_ca)},
                     {"require_client_cert", listener.tls->require_client_cert}};
    }
    list.push_back(std::move(item));
  }
  return list;
}

}  // namespace

json to_json(const LimitPolicyConfig& policy) {
  return {{"requests", policy.requests},
          {"window_ms", policy.window.count()},
          {"buckets", policy.buckets},
          {"mode", to_string(policy.mode)}};
}

json to_json(const BreakerConfig& breaker) {
  return {{"enabled", breaker.enabled},
          {"mode", to_string(breaker.mode)},
          {"slow_ms", breaker.slow.count()},
          {"k", breaker.k},
          {"protection", breaker.protection},
          {"window_ms", breaker.window.count()},
          {"buckets", breaker.buckets},
          {"failure_statuses", breaker.failure_statuses},
          {"failure_grpc_statuses", breaker.failure_grpc_statuses}};
}

json to_json(const HealthCheckConfig& check) {
  if (check.type == HealthCheckConfig::Type::kGrpc) {
    return {{"type", "grpc"},
            {"service", check.service},
            {"interval_ms", check.interval.count()},
            {"timeout_ms", check.timeout.count()},
            {"healthy_threshold", check.healthy_threshold},
            {"unhealthy_threshold", check.unhealthy_threshold}};
  }
  return {{"type", "http"},
          {"path", check.path},
          {"interval_ms", check.interval.count()},
          {"timeout_ms", check.timeout.count()},
          {"healthy_threshold", check.healthy_threshold},
          {"unhealthy_threshold", check.unhealthy_threshold},
          {"expected_statuses", check.expected_statuses}};
}

json to_json(const OutlierConfig& outlier) {
  return {{"consecutive_failures", outlier.consecutive_failures},
          {"base_ejection_ms", outlier.base_ejection.count()},
          {"max_ejection_percent", outlier.max_ejection_percent}};
}

json to_json(const RetryConfig& retry) {
  json on = json::array();
  for (const auto& [enabled, word] :
       {std::pair{retry.on_connect_error, "connect_error"}, std::pair{retry.on_reset, "reset"},
        std::pair{retry.on_timeout, "timeout"}}) {
    if (enabled) {
      on.push_back(word);
    }
  }
  for (const int status : retry.on_statuses) {
    on.push_back(status);
  }
  return {{"attempts", retry.attempts},
          {"on", std::move(on)},
          {"backoff_ms", retry.backoff.count()},
          {"budget_percent", retry.budget_percent},
          {"min_retry_concurrency", retry.min_retry_concurrency},
          {"non_idempotent", retry.non_idempotent}};
}

json endpoints_json(const BackendConfig& backend) {
  json list = json::array();
  for (const auto& endpoint : backend.endpoints) {
    list.push_back(to_string(endpoint));
  }
  return list;
}

json to_json(const BackendConfig& backend) {
  json out{{"endpoints", endpoints_json(backend)},
           {"balance", to_string(backend.balance)},
           {"connect_timeout_ms", backend.connect_timeout.count()},
           {"timeout_ms", backend.timeout.count()},
           {"max_idle_per_endpoint", backend.max_idle_per_endpoint},
           {"protocol", to_string(backend.protocol)},
           {"max_streams_per_connection", backend.max_streams_per_connection},
           {"breaker", to_json(backend.breaker)}};
  if (backend.tls) {
    const BackendTlsConfig& tls = *backend.tls;
    out["tls"] = {{"enabled", tls.enabled},
                  {"ca", optional_string(tls.ca)},
                  {"verify", tls.verify},
                  {"server_name", optional_string(tls.server_name)},
                  {"cert", optional_string(tls.cert)},
                  {"key", optional_string(tls.key)}};
  }
  if (backend.health_check) {
    out["health_check"] = to_json(*backend.health_check);
  }
  if (backend.outlier) {
    out["outlier"] = to_json(*backend.outlier);
  }
  if (backend.concurrency) {
    out["concurrency"] = {{"enabled", backend.concurrency->enabled},
                          {"min", backend.concurrency->min},
                          {"max", backend.concurrency->max}};
  }
  if (backend.retry) {
    out["retry"] = to_json(*backend.retry);
  }
  return out;
}

json to_json(const RouteConfig& route) {
  return {{"name", route.name},
          {"prefix", route.prefix},
          {"backend", route.backend},
          {"limit", optional_string(route.limit)},
          {"methods", route.methods.empty() ? json(nullptr) : json(route.methods)},
          {"host", optional_string(route.host)},
          {"strip_prefix", route.strip_prefix},
          {"upgrades", route.upgrades},
          {"auth", to_string(route.auth)},
          {"strip_credentials", route.strip_credentials}};
}

json limits_json(const Config& config) {
  json out = json::object();
  for (const auto& [name, policy] : config.limits) {
    out[name] = to_json(policy);
  }
  return out;
}

json routes_json(const Config& config) {
  json list = json::array();
  for (const auto& route : config.routes) {
    list.push_back(to_json(route));
  }
  return list;
}

json to_json(const Config& config) {
  json backends = json::object();
  for (const auto& [name, backend] : config.backends) {
    backends[name] = to_json(backend);
  }
  return {
      {"listeners", listeners_json(config.listeners)},
      {"admin",
       {{"address", config.admin.address},
        {"port", config.admin.port},
        {"token_env", optional_string(config.admin.token_env)},
        {"persist", config.admin.persist},
        {"top_users", config.admin.top_users}}},
      {"threads", config.threads},
      {"drain_timeout_ms", config.drain_timeout.count()},
      {"config_watch", config.config_watch},
      {"http", http_json(config.http)},
      {"access_log",
       {{"enabled", config.access_log.enabled},
        {"path", config.access_log.path},
        {"user_hash_key_env", optional_string(config.access_log.user_hash_key_env)}}},
      {"identity", identity_json(config.identity)},
      {"auth", auth_json(config.auth)},
      {"store", store_json(config.store)},
      {"fleet",
       {{"enabled", config.fleet.enabled},
        {"name", config.fleet.name},
        {"replica_id", optional_string(config.fleet.replica_id)},
        {"sync_timeout_ms", config.fleet.sync_timeout.count()},
        {"heartbeat_ms", config.fleet.heartbeat.count()}}},
      {"limits", limits_json(config)},
      {"overrides", overrides_json(config)},
      {"tiers", tiers_json(config)},
      {"backends", std::move(backends)},
      {"routes", routes_json(config)},
  };
}

}  // namespace sluice::config
