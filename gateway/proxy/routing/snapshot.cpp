// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/routing/snapshot.hpp"

#include <algorithm>

#include "gateway/config/endpoint.hpp"
#include "gateway/health/health_registry.hpp"

namespace sluice::proxy {
namespace {

std::vector<UpstreamEndpoint> compile_endpoints(const config::BackendConfig& backend,
                                                const std::shared_ptr<const tls::ClientTls>& tls) {
  std::vector<UpstreamEndpoint> out;
  out.reserve(backend.endpoints.size());
  for (const auto& e : backend.endpoints) {
    UpstreamEndpoint u;
    u.label = config::to_string(e);
    u.host = e.host;
    u.port = e.port;
    if (const auto ip = config::parse_ip_address(e.host)) {
      u.address = boost::asio::ip::tcp::endpoint(*ip, e.port);
    }
    u.tls = tls;
    u.protocol = backend.protocol;
    u.max_streams_per_connection = backend.max_streams_per_connection;
    out.push_back(std::move(u));
  }
  return out;
}

std::shared_ptr<const tls::ClientTls> backend_tls(const Bindings& bindings,
                                                  const std::string& backend) {
  const auto it = bindings.backend_tls.find(backend);
  return it == bindings.backend_tls.end() ? nullptr : it->second;
}

std::shared_ptr<breaker::ConcurrencyLimit> concurrency_limit(const Bindings& bindings,
                                                             const std::string& backend) {
  const auto it = bindings.concurrency.find(backend);
  return it == bindings.concurrency.end() ? nullptr : it->second;
}

std::shared_ptr<health::EndpointHealth> endpoint_health(const Bindings& bindings,
                                                        const std::string& backend,
                                                        const config::BackendConfig& config) {
  const auto it = bindings.health.find(backend);
  if (it != bindings.health.end()) {
    return it->second;
  }
  auto own = std::make_shared<health::EndpointHealth>(health::endpoint_labels(config));
  own->configure(config.outlier, config.health_check);
  return own;
}

std::vector<Route> compile_routes(const config::Config& config,
                                  const std::vector<std::unique_ptr<Backend>>& backends,
                                  const std::vector<std::unique_ptr<RouteLimit>>& limits,
                                  const Bindings& bindings) {
  std::vector<Route> routes;
  routes.reserve(config.routes.size());
  for (const auto& r : config.routes) {
    Route route;
    route.name = r.name;
    route.prefix = r.prefix;
    if (r.host) {
      route.host = normalize_host(*r.host);
    }
    route.methods = r.methods;
    route.limit = r.limit;
    route.strip_prefix = r.strip_prefix;
    route.upgrades = r.upgrades;
    route.auth = r.auth;
    route.strip_credentials = r.strip_credentials;
    // Validation guarantees the backend exists.
    const auto it = std::find_if(backends.begin(), backends.end(),
                                 [&](const auto& b) { return b->name() == r.backend; });
    route.backend = static_cast<std::size_t>(it - backends.begin());
    route.metrics = bindings.route_metrics.at({r.name, r.backend});
    if (r.limit) {
      const auto limit = std::find_if(limits.begin(), limits.end(),
                                      [&](const auto& l) { return l->name == *r.limit; });
      route.rate_limit = limit->get();  // validation guarantees the policy exists
    }
    routes.push_back(std::move(route));
  }
  return routes;
}

std::vector<std::unique_ptr<Backend>> compile_backends(const config::Config& config,
                                                       const Bindings& bindings) {
  std::vector<std::unique_ptr<Backend>> backends;
  for (const auto& [name, backend] : config.backends) {
    backends.push_back(std::make_unique<Backend>(name, backend, bindings));
  }
  return backends;
}

std::vector<std::unique_ptr<RouteLimit>> compile_limits(const config::Config& config,
                                                        const Bindings& bindings) {
  std::vector<std::unique_ptr<RouteLimit>> limits;
  for (const auto& [name, policy] : config.limits) {
    auto limit = std::make_unique<RouteLimit>();
    limit->id = bindings.policies.at(name);
    if (const auto tiers = bindings.tier_policies.find(name);
        tiers != bindings.tier_policies.end()) {
      limit->tiers = tiers->second;
    }
    limit->name = name;
    limit->mode = policy.mode == config::LimitMode::kShadow ? limiter::Mode::kShadow
                                                            : limiter::Mode::kEnforce;
    limit->window_s = whole_seconds_up(policy.window);
    limit->quoted_name = structured_string(name);
    limit->json_name = json_string(name);
    limit->metrics = bindings.policy_metrics.at(name);
    if (const auto sketch = bindings.top_users.find(name); sketch != bindings.top_users.end()) {
      limit->top_users = sketch->second;
    }
    limits.push_back(std::move(limit));
  }
  return limits;
}

core::Duration timeout_floor(const config::Config& config) {
  core::Duration smallest =
      std::min<core::Duration>(config.http.header_timeout, config.http.idle_timeout);
  for (const auto& [name, backend] : config.backends) {
    smallest = std::min<core::Duration>({smallest, backend.connect_timeout, backend.timeout});
  }
  return smallest;
}

}  // namespace

breaker::BreakerParams breaker_params(const config::BreakerConfig& config) {
  return {.enabled = config.enabled,
          .k = config.k,
          .protection = config.protection,
          .window = config.window,
          .buckets = config.buckets,
          .shadow = config.mode == config::EnforcementMode::kShadow};
}

std::optional<breaker::ConcurrencyParams> concurrency_params(
    const std::optional<config::ConcurrencyConfig>& config) {
  if (!config) {
    return std::nullopt;
  }
  breaker::ConcurrencyParams params;
  params.enabled = config->enabled;
  params.min = config->min;
  params.max = config->max;
  return params;
}

limiter::Policy limiter_policy(const config::Config& config, const std::string& name) {
  const config::LimitPolicyConfig& c = config.limits.at(name);
  limiter::Policy policy;
  policy.name = name;
  policy.requests = c.requests;
  policy.window = c.window;
  policy.buckets = c.buckets;
  policy.mode =
      c.mode == config::LimitMode::kShadow ? limiter::Mode::kShadow : limiter::Mode::kEnforce;
  if (const auto it = config.overrides.find(name); it != config.overrides.end()) {
    policy.overrides.insert(it->second.begin(), it->second.end());
  }
  return policy;
}

Backend::Backend(std::string name, const config::BackendConfig& config, const Bindings& bindings)
    : name_(std::move(name)),
      config_(config),
      endpoints_(compile_endpoints(config, backend_tls(bindings, name_))),
      balancer_(config.balance, endpoint_health(bindings, name_, config), name_),
      breaker_(bindings.breakers.at(name_)),
      concurrency_(concurrency_limit(bindings, name_)),
      slow_call_(std::chrono::duration_cast<core::Duration>(config.breaker.slow)),
      metrics_(bindings.backend_metrics.at(name_)),
      unavailable_body_(R"({"error":"backend_unavailable","backend":)" + json_string(name_) + "}"),
      overloaded_body_(R"({"error":"backend_overloaded","backend":)" + json_string(name_) + "}") {
  for (const int status : config.breaker.failure_statuses) {
    if (status >= 0 && static_cast<std::size_t>(status) < failures_.size()) {
      failures_.set(static_cast<std::size_t>(status));
    }
  }
  for (const int status : config.breaker.failure_grpc_statuses) {
    if (status >= 0 && static_cast<std::size_t>(status) < grpc_failures_.size()) {
      grpc_failures_.set(static_cast<std::size_t>(status));
    }
  }
}

Snapshot::~Snapshot() {
  released_->store(true, std::memory_order_release);
}

Snapshot::Snapshot(std::shared_ptr<const config::Config> config, const Bindings& bindings)
    : config_(std::move(config)),
      backends_(compile_backends(*config_, bindings)),
      limits_(compile_limits(*config_, bindings)),
      router_(compile_routes(*config_, backends_, limits_, bindings)),
      unrouted_(bindings.unrouted),
      smallest_timeout_(timeout_floor(*config_)) {}

std::string tier_policy_name(std::string_view policy, std::string_view tier) {
  return std::string(policy).append("~").append(tier);
}

limiter::Policy tier_policy(const config::Config& config, const std::string& policy,
                            const std::string& tier) {
  limiter::Policy out = limiter_policy(config, policy);
  out.name = tier_policy_name(policy, tier);
  out.requests = config.tiers.at(policy).at(tier);
  return out;
}

}  // namespace sluice::proxy
