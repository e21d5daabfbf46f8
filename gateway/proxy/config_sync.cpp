// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/config_sync.hpp"

#include <algorithm>

namespace sluice::proxy {
namespace {

bool has_route(const config::Config& config, const std::pair<std::string, std::string>& pair) {
  return std::any_of(config.routes.begin(), config.routes.end(), [&](const auto& r) {
    return r.name == pair.first && r.backend == pair.second;
  });
}

}  // namespace

Bindings ConfigSync::apply(const config::Config& config) {
  Bindings b;
  for (const auto& [name, policy] : config.limits) {
    b.policies.emplace(name, store_.apply(limiter_policy(config, name)));
    b.policy_metrics.emplace(name, &metrics_.policy(name));
  }
  for (const auto& [name, backend] : config.backends) {
    b.breakers.emplace(name, breakers_.sync(name, breaker_params(backend.breaker)));
    b.backend_metrics.emplace(name, &metrics_.backend(name));
  }
  for (const auto& r : config.routes) {
    b.route_metrics.emplace(std::make_pair(r.name, r.backend), &metrics_.route(r.name, r.backend));
  }
  b.unrouted = &metrics_.route("none", "none");
  return b;
}

void ConfigSync::retire(const config::Config& previous, std::shared_ptr<const config::Config> next,
                        std::weak_ptr<const Snapshot> old) {
  Retired retired;
  retired.old = std::move(old);
  for (const auto& [name, policy] : previous.limits) {
    if (!next->limits.contains(name)) {
      store_.remove(name);
      retired.policies.push_back(name);
    }
  }
  std::set<std::string, std::less<>> backends;
  for (const auto& [name, backend] : next->backends) {
    backends.insert(name);
  }
  breakers_.retain(backends);
  for (const auto& [name, backend] : previous.backends) {
    if (!backends.contains(name)) {
      retired.backends.push_back(name);
    }
  }
  for (const auto& r : previous.routes) {
    const auto pair = std::make_pair(r.name, r.backend);
    if (!has_route(*next, pair)) {
      retired.routes.push_back(pair);
    }
  }
  current_ = std::move(next);
  if (!retired.routes.empty() || !retired.backends.empty() || !retired.policies.empty()) {
    pending_.push_back(std::move(retired));
  }
}

std::size_t ConfigSync::collect() {
  std::size_t removed = 0;
  std::erase_if(pending_, [&](const Retired& r) {
    if (!r.old.expired()) {
      return false;
    }
    for (const auto& pair : r.routes) {
      if (current_ == nullptr || !has_route(*current_, pair)) {
        metrics_.remove_route(pair.first, pair.second);
        ++removed;
      }
    }
    for (const auto& name : r.backends) {
      if (current_ == nullptr || !current_->backends.contains(name)) {
        metrics_.remove_backend(name);
        ++removed;
      }
    }
    for (const auto& name : r.policies) {
      if (current_ == nullptr || !current_->limits.contains(name)) {
        metrics_.remove_policy(name);
        ++removed;
      }
    }
    return true;
  });
  return removed;
}

}  // namespace sluice::proxy
