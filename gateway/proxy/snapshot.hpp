// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <bitset>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gateway/breaker/adaptive_breaker.hpp"
#include "gateway/breaker/breaker_registry.hpp"
#include "gateway/config/config.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/proxy/balancer.hpp"
#include "gateway/proxy/rate_limit_fields.hpp"
#include "gateway/proxy/router.hpp"
#include "gateway/store/limit_store.hpp"

namespace sluice::proxy {

/// One configured endpoint of a backend.
struct UpstreamEndpoint {
  std::string label;  ///< "host:port" as configured: logs and the connection pool key
  std::string host;
  std::uint16_t port = 0;
  /// Set when `host` is an IP literal (no resolution needed).
  std::optional<boost::asio::ip::tcp::endpoint> address;
};

/// The state that outlives config versions, which a snapshot binds to when it is compiled: the
/// limit store (policies are applied to it), the breakers, the metric handles. Owned by the
/// Gateway; each member is thread-safe.
struct SharedState {
  store::LimitStore& store;
  breaker::BreakerRegistry& breakers;
  metrics::Metrics& metrics;
};

/// A backend as the data path uses it. Immutable but for the balancer's in-flight counters
/// and the (thread-safe) breaker and metrics it points to.
class Backend {
 public:
  Backend(std::string name, const config::BackendConfig& config, SharedState& shared);

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const config::BackendConfig& config() const noexcept { return config_; }
  [[nodiscard]] const std::vector<UpstreamEndpoint>& endpoints() const noexcept {
    return endpoints_;
  }
  [[nodiscard]] const Balancer& balancer() const noexcept { return balancer_; }
  /// The backend's breaker (the same object across config versions).
  [[nodiscard]] breaker::AdaptiveBreaker& breaker() const noexcept { return *breaker_; }
  [[nodiscard]] metrics::BackendMetrics& metrics() const noexcept { return *metrics_; }
  /// True for a status in `breaker.failure_statuses`.
  [[nodiscard]] bool is_failure(unsigned status) const noexcept {
    return status < failures_.size() && failures_.test(status);
  }
  /// The 503 body of a breaker drop: {"error":"backend_unavailable","backend":NAME}.
  [[nodiscard]] const std::string& unavailable_body() const noexcept { return unavailable_body_; }

 private:
  std::string name_;
  config::BackendConfig config_;
  std::vector<UpstreamEndpoint> endpoints_;
  Balancer balancer_;
  std::shared_ptr<breaker::AdaptiveBreaker> breaker_;
  metrics::BackendMetrics* metrics_;
  std::bitset<600> failures_;
  std::string unavailable_body_;
};

/// The breaker tuning of a backend's config.
[[nodiscard]] breaker::BreakerParams breaker_params(const config::BreakerConfig& config);
/// A config policy (with its overrides) as the limiter takes it.
[[nodiscard]] limiter::Policy limiter_policy(const config::Config& config, const std::string& name);

/// Everything a request needs from one version of the config, compiled: the router and the
/// backends. Immutable (thread-safe); a reload builds a new one and swaps it in, and in-flight
/// requests finish on the one they started with.
class Snapshot {
 public:
  /// Compiles `config`, binding it to `shared`: applies every policy to the store (counts of
  /// existing policies survive), syncs the breakers, and creates the metric handles. Removing
  /// policies and breakers the config no longer has is the caller's job, once the snapshot is
  /// published (requests on the old one may still use them).
  Snapshot(std::shared_ptr<const config::Config> config, SharedState& shared);

  [[nodiscard]] const config::Config& config() const noexcept { return *config_; }
  [[nodiscard]] const Router& router() const noexcept { return router_; }
  [[nodiscard]] const Backend& backend(std::size_t index) const noexcept {
    return *backends_[index];
  }
  [[nodiscard]] std::size_t backend_count() const noexcept { return backends_.size(); }
  /// Metrics of requests that matched no route (route="none", backend="none").
  [[nodiscard]] metrics::RouteMetrics& unrouted_metrics() const noexcept { return *unrouted_; }

 private:
  std::shared_ptr<const config::Config> config_;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<std::unique_ptr<RouteLimit>> limits_;
  Router router_;
  metrics::RouteMetrics* unrouted_;
};

/// The current snapshot, swapped atomically on reload. Thread-safe. Readers check the
/// generation (one relaxed atomic load) and copy the snapshot only when it changed.
class SnapshotSource {
 public:
  explicit SnapshotSource(std::shared_ptr<const Snapshot> initial) : current_(std::move(initial)) {}

  [[nodiscard]] std::shared_ptr<const Snapshot> load() const {
    std::lock_guard lock(mutex_);
    return current_;
  }
  void store(std::shared_ptr<const Snapshot> next) {
    std::lock_guard lock(mutex_);
    current_ = std::move(next);
    generation_.fetch_add(1, std::memory_order_release);
  }
  [[nodiscard]] std::uint64_t generation() const noexcept {
    return generation_.load(std::memory_order_acquire);
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const Snapshot> current_;
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace sluice::proxy
