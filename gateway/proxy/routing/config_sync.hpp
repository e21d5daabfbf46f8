// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gateway/breaker/breaker_registry.hpp"
#include "gateway/config/config.hpp"
#include "gateway/health/health_registry.hpp"
#include "gateway/insight/top_users.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/proxy/routing/snapshot.hpp"
#include "gateway/store/limit_store.hpp"

namespace sluice::proxy {

/// The one step that applies a config version to the state that outlives versions, and retires
/// what a new version no longer has (docs/architecture.md, "Config versions"):
/// - apply(): every policy is applied to the store (the counts of existing policies survive; a
///   new window shape carries each key's total over) and, with heavy hitters on, gets its sketch
///   (kept while its window stays), every backend's breaker is created or retuned in place,
///   every backend's endpoint health synced (docs/endpoint-health.md), every
///   route/backend/policy gets its metric series;
/// - retire(): policies the new version lacks leave the store and the sketches at once (a
///   request still on the old snapshot is admitted), breakers of vanished backends are forgotten
///   (the old snapshot keeps them alive), and their metric series are removed by collect() once
///   the old snapshot and every older one are gone, so no request can touch a removed series.
/// Confined to the control thread; the store, registries and metrics outlive it.
class ConfigSync {
 public:
  /// `top_users`: the policies' heavy hitters, or null when `admin.top_users` is off.
  ConfigSync(store::LimitStore& store, breaker::BreakerRegistry& breakers,
             health::HealthRegistry& health, metrics::Metrics& metrics,
             insight::TopUsersRegistry* top_users = nullptr)
      : store_(store),
        breakers_(breakers),
        health_(health),
        metrics_(metrics),
        top_users_(top_users) {}

  [[nodiscard]] Bindings apply(const config::Config& config);

  /// `next` replaced `previous`; `old` is the snapshot of `previous` (still used by requests in
  /// flight).
  void retire(const config::Config& previous, std::shared_ptr<const config::Config> next,
              const Snapshot& old);

  /// Removes the metric series retired versions left behind once their snapshot and every
  /// older one are gone, unless the current version has them again or a newer snapshot that had
  /// them is still queued. Returns how many routes, backends and policies lost their series.
  std::size_t collect();

  /// Replaced snapshots not yet collected (oldest first).
  [[nodiscard]] std::size_t pending() const noexcept { return pending_.size(); }

 private:
  struct Retired {
    std::shared_ptr<const std::atomic<bool>> released;        ///< of the replaced snapshot
    std::vector<std::pair<std::string, std::string>> routes;  ///< (route, backend)
    std::vector<std::string> backends;
    std::vector<std::string> policies;
  };

  store::LimitStore& store_;
  breaker::BreakerRegistry& breakers_;
  health::HealthRegistry& health_;
  metrics::Metrics& metrics_;
  insight::TopUsersRegistry* top_users_;
  std::shared_ptr<const config::Config> current_;
  std::vector<Retired> pending_;
};

}  // namespace sluice::proxy
