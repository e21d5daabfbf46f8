// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/routing/config_sync.hpp"

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
    if (top_users_ != nullptr) {
      b.top_users.emplace(name, top_users_->sync(name, policy.window));
    }
  }
  for (const auto& [name, tiers] : config.tiers) {
    auto& ids = b.tier_policies[name];
    for (const auto& [tier, requests] : tiers) {
      ids.emplace_back(tier, store_.apply(tier_policy(config, name, tier)));
    }
  }
  for (const auto& [name, backend] : config.backends) {
    b.breakers.emplace(name, breakers_.sync(name, breaker_params(backend.breaker)));
    if (auto limit = breakers_.sync_concurrency(name, concurrency_params(backend.concurrency))) {
      b.concurrency.emplace(name, std::move(limit));
    }
    b.health.emplace(name, health_.sync(name, backend));
    b.backend_metrics.emplace(name, &metrics_.backend(name));
  }
  for (const auto& r : config.routes) {
    b.route_metrics.emplace(std::make_pair(r.name, r.backend), &metrics_.route(r.name, r.backend));
  }
  b.unrouted = &metrics_.route("none", "none");
  return b;
}

void ConfigSync::retire(const config::Config& previous, std::shared_ptr<const config::Config> next,
                        const Snapshot& old) {
  Retired retired;
  retired.released = old.released();
  for (const auto& [name, policy] : previous.limits) {
    if (!next->limits.contains(name)) {
      store_.remove(name);
      if (top_users_ != nullptr) {
        top_users_->remove(name);
      }
      retired.policies.push_back(name);
    }
  }
  for (const auto& [name, tiers] : previous.tiers) {
    for (const auto& [tier, requests] : tiers) {
      const auto kept = next->tiers.find(name);
      if (kept == next->tiers.end() || !kept->second.contains(tier)) {
        store_.remove(tier_policy_name(name, tier));  // its users fall back to the policy's
      }
    }
  }
  std::set<std::string, std::less<>> backends;
  for (const auto& [name, backend] : next->backends) {
    backends.insert(name);
  }
  breakers_.retain(backends);
  health_.retain(backends);
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
  // Every replaced snapshot is queued, even one that retired nothing: collect() goes oldest
  // first, so a series is only removed once every older snapshot, which may use it, is gone.
  pending_.push_back(std::move(retired));
}

std::size_t ConfigSync::collect() {
  std::size_t done = 0;  // the oldest entries whose snapshots are all gone
  while (done < pending_.size() && pending_[done].released->load(std::memory_order_acquire)) {
    ++done;
  }
  // A name a later entry retires again was used by a newer snapshot: that entry removes it.
  const auto retired_later = [&](std::size_t i, const auto& member, const auto& name) {
    return std::any_of(pending_.begin() + static_cast<std::ptrdiff_t>(i) + 1, pending_.end(),
                       [&](const Retired& later) {
                         const auto& names = later.*member;
                         return std::find(names.begin(), names.end(), name) != names.end();
                       });
  };
  std::size_t removed = 0;
  for (std::size_t i = 0; i < done; ++i) {
    const Retired& r = pending_[i];
    for (const auto& pair : r.routes) {
      if (!has_route(*current_, pair) && !retired_later(i, &Retired::routes, pair)) {
        metrics_.remove_route(pair.first, pair.second);
        ++removed;
      }
    }
    for (const auto& name : r.backends) {
      if (!current_->backends.contains(name) && !retired_later(i, &Retired::backends, name)) {
        metrics_.remove_backend(name);
        ++removed;
      }
    }
    for (const auto& name : r.policies) {
      if (!current_->limits.contains(name) && !retired_later(i, &Retired::policies, name)) {
        metrics_.remove_policy(name);
        ++removed;
      }
    }
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(done));
  return removed;
}

}  // namespace sluice::proxy
