// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <bitset>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gateway/breaker/adaptive_breaker.hpp"
#include "gateway/breaker/concurrency_limit.hpp"
#include "gateway/config/config.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/proxy/routing/balancer.hpp"
#include "gateway/proxy/routing/rate_limit_fields.hpp"
#include "gateway/proxy/routing/router.hpp"
#include "gateway/proxy/routing/upstream_endpoint.hpp"
#include "gateway/store/limit_store.hpp"

namespace sluice::proxy {

/// What one config version is bound to in the state that outlives versions (the store's policy
/// ids, the breakers, the metric handles). ConfigSync::apply() produces it; a Snapshot is built
/// from a config and its bindings without touching shared state (docs/architecture.md,
/// "Config versions").
struct Bindings {
  std::map<std::string, store::PolicyId, std::less<>> policies;
  /// policy -> its tiers' store policies (tier_policy_name()).
  std::map<std::string, std::vector<std::pair<std::string, store::PolicyId>>, std::less<>>
      tier_policies;
  std::map<std::string, std::shared_ptr<breaker::AdaptiveBreaker>, std::less<>> breakers;
  /// The concurrency limit of each backend that has one.
  std::map<std::string, std::shared_ptr<breaker::ConcurrencyLimit>, std::less<>> concurrency;
  std::map<std::string, metrics::BackendMetrics*, std::less<>> backend_metrics;
  std::map<std::string, metrics::PolicyMetrics*, std::less<>> policy_metrics;
  /// Each policy's heavy-hitter sketch id (empty with `admin.top_users` off).
  std::map<std::string, std::uint32_t, std::less<>> top_users;
  std::map<std::pair<std::string, std::string>, metrics::RouteMetrics*> route_metrics;
  metrics::RouteMetrics* unrouted = nullptr;  ///< route="none", backend="none"
  /// Each backend's endpoint health (shared across versions; a backend missing here gets a
  /// fresh one of its own).
  std::map<std::string, std::shared_ptr<health::EndpointHealth>, std::less<>> health;
  /// The client TLS of each backend that speaks TLS (loaded from its files by the gateway).
  std::map<std::string, std::shared_ptr<const tls::ClientTls>, std::less<>> backend_tls;
};

/// A backend as the data path uses it. Immutable but for the balancer's in-flight counters and
/// the (thread-safe) breaker and metrics it points to.
class Backend {
 public:
  Backend(std::string name, const config::BackendConfig& config, const Bindings& bindings);

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const config::BackendConfig& config() const noexcept { return config_; }
  [[nodiscard]] const std::vector<UpstreamEndpoint>& endpoints() const noexcept {
    return endpoints_;
  }
  [[nodiscard]] const Balancer& balancer() const noexcept { return balancer_; }
  [[nodiscard]] health::EndpointHealth& health() const noexcept { return balancer_.health(); }
  /// The backend's breaker (the same object across config versions).
  [[nodiscard]] breaker::AdaptiveBreaker& breaker() const noexcept { return *breaker_; }
  [[nodiscard]] metrics::BackendMetrics& metrics() const noexcept { return *metrics_; }
  /// The backend's adaptive concurrency limit (the same object across config versions), or
  /// null without a `concurrency` object.
  [[nodiscard]] breaker::ConcurrencyLimit* concurrency() const noexcept {
    return concurrency_.get();
  }
  /// `breaker.slow_ms`: a response head slower than this is a breaker failure (zero: off).
  [[nodiscard]] core::Duration slow_call() const noexcept { return slow_call_; }
  /// True for a status in `breaker.failure_statuses`.
  [[nodiscard]] bool is_failure(unsigned status) const noexcept {
    return status < failures_.size() && failures_.test(status);
  }
  /// True for a gRPC status in `breaker.failure_grpc_statuses`.
  [[nodiscard]] bool is_grpc_failure(int status) const noexcept {
    return status >= 0 && static_cast<std::size_t>(status) < grpc_failures_.size() &&
           grpc_failures_.test(static_cast<std::size_t>(status));
  }
  /// The 503 body of a breaker drop: {"error":"backend_unavailable","backend":NAME}.
  [[nodiscard]] const std::string& unavailable_body() const noexcept { return unavailable_body_; }
  /// The 503 body of a request over the concurrency limit:
  /// {"error":"backend_overloaded","backend":NAME}.
  [[nodiscard]] const std::string& overloaded_body() const noexcept { return overloaded_body_; }

 private:
  std::string name_;
  config::BackendConfig config_;
  std::vector<UpstreamEndpoint> endpoints_;
  Balancer balancer_;
  std::shared_ptr<breaker::AdaptiveBreaker> breaker_;
  std::shared_ptr<breaker::ConcurrencyLimit> concurrency_;
  core::Duration slow_call_;
  metrics::BackendMetrics* metrics_;
  std::bitset<600> failures_;
  std::bitset<17> grpc_failures_;
  std::string unavailable_body_;
  std::string overloaded_body_;
};

/// The breaker tuning of a backend's config.
[[nodiscard]] breaker::BreakerParams breaker_params(const config::BreakerConfig& config);
/// The concurrency limit of a backend's config (empty without a `concurrency` object).
[[nodiscard]] std::optional<breaker::ConcurrencyParams> concurrency_params(
    const std::optional<config::ConcurrencyConfig>& config);
/// A config policy (with its overrides) as the limiter takes it.
[[nodiscard]] limiter::Policy limiter_policy(const config::Config& config, const std::string& name);

/// The store policy of `tier` under `policy` (docs/identity.md "Tiers"): `policy~tier`, a name
/// no configured policy can have (names are letters, digits, '_' and '-').
[[nodiscard]] std::string tier_policy_name(std::string_view policy, std::string_view tier);
/// `policy` as `tier` gets it: the tier's requests, the policy's window and its per-user
/// overrides (a user's own override still wins).
[[nodiscard]] limiter::Policy tier_policy(const config::Config& config, const std::string& policy,
                                          const std::string& tier);

/// Everything a request needs from one version of the config, compiled: the router, the
/// backends and the limits. Built from a config and its Bindings only: constructing one changes
/// nothing outside it. Immutable (thread-safe); a reload builds a new one and swaps it in, and
/// requests in flight finish on the one they started with.
class Snapshot {
 public:
  Snapshot(std::shared_ptr<const config::Config> config, const Bindings& bindings);
  /// Sets released() with release order, on the thread that let go last.
  ~Snapshot();
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;

  [[nodiscard]] const config::Config& config() const noexcept { return *config_; }
  [[nodiscard]] const Router& router() const noexcept { return router_; }
  [[nodiscard]] const Backend& backend(std::size_t index) const noexcept {
    return *backends_[index];
  }
  [[nodiscard]] std::size_t backend_count() const noexcept { return backends_.size(); }
  /// Metrics of requests that matched no route (route="none", backend="none").
  [[nodiscard]] metrics::RouteMetrics& unrouted_metrics() const noexcept { return *unrouted_; }
  /// The smallest timeout of this version (the worker's deadline sweep ticks at an eighth).
  [[nodiscard]] core::Duration smallest_timeout() const noexcept { return smallest_timeout_; }
  /// True once this snapshot is destroyed; outlives it. Whoever reads it true with acquire
  /// order sees every use of the metric handles the snapshot lent out (a weak_ptr's expired()
  /// reads its count relaxed, which orders nothing).
  [[nodiscard]] std::shared_ptr<const std::atomic<bool>> released() const noexcept {
    return released_;
  }

 private:
  std::shared_ptr<const config::Config> config_;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<std::unique_ptr<RouteLimit>> limits_;
  Router router_;
  metrics::RouteMetrics* unrouted_;
  core::Duration smallest_timeout_;
  std::shared_ptr<std::atomic<bool>> released_ = std::make_shared<std::atomic<bool>>(false);
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
