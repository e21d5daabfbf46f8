// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/snapshot.hpp"

#include <algorithm>

#include "gateway/config/endpoint.hpp"

namespace sluice::proxy {
namespace {

std::vector<UpstreamEndpoint> compile_endpoints(const std::vector<config::Endpoint>& endpoints) {
  std::vector<UpstreamEndpoint> out;
  out.reserve(endpoints.size());
  for (const auto& e : endpoints) {
    UpstreamEndpoint u;
    u.label = config::to_string(e);
    u.host = e.host;
    u.port = e.port;
    if (const auto ip = config::parse_ip_address(e.host)) {
      u.address = boost::asio::ip::tcp::endpoint(*ip, e.port);
    }
    out.push_back(std::move(u));
  }
  return out;
}

std::vector<Route> compile_routes(const config::Config& config,
                                  const std::vector<std::unique_ptr<Backend>>& backends) {
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
    // Validation guarantees the backend exists.
    const auto it = std::find_if(backends.begin(), backends.end(),
                                 [&](const auto& b) { return b->name() == r.backend; });
    route.backend = static_cast<std::size_t>(it - backends.begin());
    routes.push_back(std::move(route));
  }
  return routes;
}

std::vector<std::unique_ptr<Backend>> compile_backends(const config::Config& config) {
  std::vector<std::unique_ptr<Backend>> backends;
  for (const auto& [name, backend] : config.backends) {
    backends.push_back(std::make_unique<Backend>(name, backend));
  }
  return backends;
}

}  // namespace

Backend::Backend(std::string name, const config::BackendConfig& config)
    : name_(std::move(name)),
      config_(config),
      endpoints_(compile_endpoints(config.endpoints)),
      balancer_(config.balance, endpoints_.size()) {}

Snapshot::Snapshot(std::shared_ptr<const config::Config> config)
    : config_(std::move(config)),
      backends_(compile_backends(*config_)),
      router_(compile_routes(*config_, backends_)) {}

}  // namespace sluice::proxy
