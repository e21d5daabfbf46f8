// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/health/endpoint_health.hpp"

namespace sluice::health {

/// The EndpointHealth of every backend by name, kept across config versions like the breakers
/// (docs/endpoint-health.md "Across reloads"): a version with the same endpoint list gets the
/// same object (reconfigured); a new list gets a new object that inherits the state of the
/// endpoints both lists have. Thread-safe (a mutex; used when a config is compiled, by the
/// health checker's ticks and by the admin API, never per request).
class HealthRegistry {
 public:
  /// The health of `backend` for `config` (its endpoints, outlier and check settings).
  std::shared_ptr<EndpointHealth> sync(std::string_view backend,
                                       const config::BackendConfig& config);
  /// Forgets every backend not in `keep`.
  void retain(const std::set<std::string, std::less<>>& keep);
  /// The health of `backend`, or null.
  [[nodiscard]] std::shared_ptr<EndpointHealth> find(std::string_view backend) const;
  /// Every backend's health by name.
  [[nodiscard]] std::vector<std::pair<std::string, std::shared_ptr<EndpointHealth>>> all() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<EndpointHealth>, std::less<>> health_;
};

/// The endpoint labels of a backend config, in order ("host:port").
[[nodiscard]] std::vector<std::string> endpoint_labels(const config::BackendConfig& config);

}  // namespace sluice::health
