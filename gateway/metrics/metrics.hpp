// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::metrics {

/// The `outcome` of an upstream request (`sluice_upstream_requests_total`).
enum class UpstreamOutcome { kSuccess, kFailure, kTimeout, kConnectError, kReset };
inline constexpr std::size_t kUpstreamOutcomes = 5;

/// The `result` of a rate-limit decision (`sluice_ratelimit_requests_total`), in the order of
/// limiter::Verdict.
inline constexpr std::size_t kLimitResults = 3;

/// `sluice_auth_total{route, method, result}` of one route (docs/identity.md "Metrics"):
/// `method` jwt, api_key or none; `result` ok or a refusal reason. Series are created on first
/// use and cached like RouteMetrics' (callers pass small indexes and the label values).
/// Thread-safe.
class AuthMetrics {
 public:
  static constexpr std::size_t kMethods = 3;
  static constexpr std::size_t kResults = 12;

  AuthMetrics(prometheus::Family<prometheus::Counter>& family, std::string route)
      : family_(family), route_(std::move(route)) {}

  /// `method` < kMethods and `result` < kResults index the series named by the two values.
  void count(std::size_t method, std::string_view method_name, std::size_t result,
             std::string_view result_name);
  void remove_series();

 private:
  prometheus::Family<prometheus::Counter>& family_;
  const std::string route_;
  std::mutex create_mutex_;
  std::array<std::atomic<prometheus::Counter*>, kMethods * kResults> counters_{};
};

/// `sluice_grpc_requests_total{route, grpc_status}` of one route (docs/grpc.md "Metrics"):
/// gRPC calls by the status they ended with (0-16; anything else counts as 2, UNKNOWN). Shared
/// by every (route, backend) pair of the route. Thread-safe; a series is created on first use.
class GrpcMetrics {
 public:
  static constexpr std::size_t kStatuses = 17;

  GrpcMetrics(prometheus::Family<prometheus::Counter>& family, std::string route)
      : family_(family), route_(std::move(route)) {}

  void count(int grpc_status);
  void remove_series();

 private:
  prometheus::Family<prometheus::Counter>& family_;
  const std::string route_;
  std::mutex create_mutex_;
  std::array<std::atomic<prometheus::Counter*>, kStatuses> counters_{};
};

/// The metrics of one (route, backend) pair: requests by status code and their latency.
/// Thread-safe. Counters for a status code are created on first use and cached: after that a
/// request costs one atomic load and the counter's own atomic add, with no label lookup.
class RouteMetrics {
 public:
  RouteMetrics(prometheus::Family<prometheus::Counter>& requests, prometheus::Histogram& duration,
               std::string route, std::string backend, std::shared_ptr<AuthMetrics> auth,
               std::shared_ptr<GrpcMetrics> grpc)
      : requests_(requests),
        duration_(duration),
        route_(std::move(route)),
        backend_(std::move(backend)),
        auth_(std::move(auth)),
        grpc_(std::move(grpc)) {}

  /// The route's credential checks (shared by every pair of the route).
  [[nodiscard]] AuthMetrics& auth() const noexcept { return *auth_; }
  [[nodiscard]] std::shared_ptr<AuthMetrics> auth_shared() const noexcept { return auth_; }
  /// The route's gRPC calls by status (shared by every pair of the route).
  [[nodiscard]] GrpcMetrics& grpc() const noexcept { return *grpc_; }
  [[nodiscard]] std::shared_ptr<GrpcMetrics> grpc_shared() const noexcept { return grpc_; }

  /// Counts one request answered with `status` (100-599; anything else counts as 499, "client
  /// closed request", nginx's code for a response never delivered) after `seconds`.
  void record(unsigned status, double seconds);

  /// Removes this pair's request counters from the registry, and its route's latency histogram
  /// when `durations` is given (no other pair of the route is left). Metrics::remove_route().
  void remove_series(prometheus::Family<prometheus::Histogram>* durations);

 private:
  prometheus::Counter& counter_for(unsigned status);

  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Histogram& duration_;
  const std::string route_;
  const std::string backend_;
  std::mutex create_mutex_;  // only for a status code's first request
  std::array<std::atomic<prometheus::Counter*>, 500> by_status_{};  // index: status - 100
  std::shared_ptr<AuthMetrics> auth_;
  std::shared_ptr<GrpcMetrics> grpc_;
};

/// Upstream connections of one backend by state. Plain atomic adds: cheaper on the data path
/// than a gauge's compare-and-swap loop on a double.
struct ConnectionCounts {
  std::atomic<std::int64_t> active{0};
  std::atomic<std::int64_t> idle{0};
};

/// The `result` of `sluice_retries_total`: a retry sent, a retry that got an answer the retry
/// policy accepts, a retry wanted but refused by the budget.
enum class RetryResult { kAttempted, kSucceeded, kBudgetExhausted };
inline constexpr std::size_t kRetryResults = 3;

/// One endpoint's health as the scrape publishes it (Metrics::publish_endpoints()).
struct EndpointSample {
  std::string endpoint;
  bool healthy = true;
  std::uint64_t ejections = 0;  ///< since the gateway started; only its growth is counted
};

/// The metrics of one backend. Thread-safe; the references stay valid for the life of Metrics.
struct BackendMetrics {
  std::array<prometheus::Counter*, kUpstreamOutcomes> upstream{};
  prometheus::Histogram* upstream_duration = nullptr;
  prometheus::Counter* breaker_drops = nullptr;
  prometheus::Counter* breaker_shadow_drops = nullptr;
  prometheus::Counter* slow_calls = nullptr;
  prometheus::Gauge* drop_probability = nullptr;
  prometheus::Gauge* window_requests = nullptr;
  prometheus::Gauge* window_accepts = nullptr;
  prometheus::Gauge* connections_active = nullptr;
  prometheus::Gauge* connections_idle = nullptr;
  std::array<prometheus::Counter*, kRetryResults> retries{};  ///< by RetryResult
  prometheus::Counter* panic_picks = nullptr;
  /// Kept by the data path and copied into the two gauges above at scrape time. Shared: an
  /// upstream connection holds the counts it is in, so a pooled connection of a backend a
  /// reload removed can still leave them after the backend's series are gone.
  std::shared_ptr<ConnectionCounts> connections = std::make_shared<ConnectionCounts>();

  void count(UpstreamOutcome outcome) { upstream[static_cast<std::size_t>(outcome)]->Increment(); }
  void count(RetryResult result) { retries[static_cast<std::size_t>(result)]->Increment(); }
};

/// One backend's adaptive concurrency limit as the scrape publishes it
/// (Metrics::publish_concurrency()).
struct ConcurrencySample {
  std::uint32_t limit = 0;
  std::int64_t in_flight = 0;
  std::uint64_t rejections = 0;  ///< since the limit was created; only its growth is counted
};

/// The metrics of one rate-limit policy. Thread-safe.
struct PolicyMetrics {
  std::array<prometheus::Counter*, kLimitResults> results{};  ///< by limiter::Verdict
  prometheus::Gauge* tracked_keys = nullptr;
};

/// Every metric of docs/behaviour.md "Metrics", on a prometheus-cpp registry served as text by the
/// admin listener. Labelled objects are created once per name (route, backend, policy) when a
/// config is compiled and handed out as stable references, so the data path never looks up a family
/// by labels nor takes a registry-wide lock. Gauges that mirror state (breaker windows, tracked
/// keys, connections) are set by the scrape hooks just before each scrape. Thread-safe; every
/// reference returned lives as long as the Metrics.
class Metrics {
 public:
  explicit Metrics(std::string_view version);

  RouteMetrics& route(std::string_view route, std::string_view backend);
  BackendMetrics& backend(std::string_view name);
  PolicyMetrics& policy(std::string_view name);
  /// Remove the series of a route, backend or policy the config no longer has. The caller
  /// guarantees that nothing uses the references handed out for it any more (ConfigSync waits
  /// until no snapshot that holds them is alive). Unknown names are ignored.
  void remove_route(std::string_view route, std::string_view backend);
  void remove_backend(std::string_view name);
  void remove_policy(std::string_view name);
  /// Sets `sluice_endpoint_healthy` and grows `sluice_endpoint_ejections_total` of `backend`'s
  /// endpoints to `samples`, removes the series of its endpoints not in them, and grows
  /// `sluice_endpoint_panic_picks_total` to `panic_picks` (a scrape hook calls this).
  void publish_endpoints(std::string_view backend, const std::vector<EndpointSample>& samples,
                         std::uint64_t panic_picks);
  /// Sets `sluice_backend_concurrency_limit` and `sluice_backend_inflight` of `backend` and grows
  /// `sluice_concurrency_rejections_total` to the sample; with no sample (the backend has no
  /// concurrency limit any more), removes the three series (a scrape hook calls this).
  void publish_concurrency(std::string_view backend,
                           const std::optional<ConcurrencySample>& sample);
  /// `sluice_store_operations_total{store, result}` for result ok, error, timeout.
  prometheus::Counter& store_operation(std::string_view store, std::string_view result);
  prometheus::Gauge& store_fallback(std::string_view store);
  /// `sluice_store_sync_seconds{store}` and `sluice_store_sync_errors_total{store}`: one
  /// thread's exchange of `store.mode: "hybrid"` (docs/distributed.md "Hybrid mode").
  prometheus::Histogram& store_sync(std::string_view store);
  prometheus::Counter& store_sync_errors(std::string_view store);
  /// `sluice_tls_handshakes_total{listener, result}` for result ok, error.
  prometheus::Counter& tls_handshakes(std::string_view listener, std::string_view result);
  /// `sluice_tls_certificate_expiry_timestamp_seconds{listener, certificate}` (its index).
  prometheus::Gauge& tls_certificate_expiry(std::string_view listener, std::size_t certificate);
  /// `sluice_tls_ocsp_staple_expiry_timestamp_seconds{listener, certificate}`: the stapled
  /// response's nextUpdate; 0 while nothing is stapled.
  prometheus::Gauge& tls_ocsp_staple_expiry(std::string_view listener, std::size_t certificate);
  /// `sluice_http2_goaways_total{listener, error}`: GOAWAY frames sluice sent, by error code
  /// name (no_error, protocol_error, ...).
  prometheus::Counter& http2_goaways(std::string_view listener, std::string_view error);
  prometheus::Gauge& downstream_connections() { return downstream_->Add({}); }
  prometheus::Gauge& tunnels_active() { return tunnels_->Add({}); }
  void count_reload(bool ok);
  /// `sluice_jwks_refreshes_total{result}` for result ok, error.
  prometheus::Counter& jwks_refreshes(std::string_view result);
  /// `sluice_access_log_dropped_total`: lines the access log lost to a full queue.
  prometheus::Counter& access_log_dropped() { return *access_log_dropped_; }
  void count_admin_change(std::string_view resource) { admin_changes(resource).Increment(); }
  prometheus::Counter& admin_changes(std::string_view resource);

  /// Runs before every scrape (on the scraping thread), to refresh mirrored gauges.
  void on_scrape(std::function<void()> hook);
  /// The registry in the Prometheus text format 0.0.4.
  [[nodiscard]] std::string scrape();
  /// For metric groups that register themselves (FleetMetrics).
  [[nodiscard]] prometheus::Registry& registry() { return *registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Histogram>* request_duration_;
  prometheus::Family<prometheus::Counter>* upstream_requests_;
  prometheus::Family<prometheus::Histogram>* upstream_duration_;
  prometheus::Family<prometheus::Counter>* ratelimit_requests_;
  prometheus::Family<prometheus::Gauge>* tracked_keys_;
  prometheus::Family<prometheus::Counter>* breaker_drops_;
  prometheus::Family<prometheus::Counter>* breaker_shadow_drops_;
  prometheus::Family<prometheus::Counter>* slow_calls_;
  prometheus::Family<prometheus::Gauge>* concurrency_limit_;
  prometheus::Family<prometheus::Gauge>* inflight_;
  prometheus::Family<prometheus::Counter>* concurrency_rejections_;
  prometheus::Family<prometheus::Gauge>* drop_probability_;
  prometheus::Family<prometheus::Gauge>* window_requests_;
  prometheus::Family<prometheus::Gauge>* window_accepts_;
  prometheus::Family<prometheus::Gauge>* downstream_;
  prometheus::Family<prometheus::Gauge>* tunnels_;
  prometheus::Family<prometheus::Gauge>* upstream_connections_;
  prometheus::Family<prometheus::Counter>* store_operations_;
  prometheus::Family<prometheus::Gauge>* store_fallback_;
  prometheus::Family<prometheus::Histogram>* store_sync_;
  prometheus::Family<prometheus::Counter>* store_sync_errors_;
  prometheus::Family<prometheus::Counter>* tls_handshakes_;
  prometheus::Family<prometheus::Gauge>* tls_certificate_expiry_;
  prometheus::Family<prometheus::Gauge>* tls_ocsp_staple_expiry_;
  prometheus::Family<prometheus::Counter>* http2_goaways_;
  prometheus::Family<prometheus::Counter>* reloads_;
  prometheus::Family<prometheus::Counter>* auth_;
  prometheus::Family<prometheus::Counter>* grpc_requests_;
  prometheus::Family<prometheus::Counter>* jwks_refreshes_;
  prometheus::Family<prometheus::Counter>* admin_changes_;
  prometheus::Counter* access_log_dropped_;
  prometheus::Family<prometheus::Counter>* retries_;
  prometheus::Family<prometheus::Counter>* panic_picks_;
  prometheus::Family<prometheus::Gauge>* endpoint_healthy_;
  prometheus::Family<prometheus::Counter>* endpoint_ejections_;
  struct EndpointSeries {
    prometheus::Gauge* healthy = nullptr;
    prometheus::Counter* ejections = nullptr;
    std::uint64_t published = 0;
  };

  std::mutex mutex_;  // the maps below and the hooks; never on the data path
  std::map<std::pair<std::string, std::string>, std::unique_ptr<RouteMetrics>> routes_;
  std::map<std::string, std::unique_ptr<BackendMetrics>, std::less<>> backends_;
  std::map<std::string, std::unique_ptr<PolicyMetrics>, std::less<>> policies_;
  std::map<std::string, std::map<std::string, EndpointSeries>, std::less<>> endpoints_;
  std::map<std::string, std::uint64_t, std::less<>> panic_published_;
  struct ConcurrencySeries {
    prometheus::Gauge* limit = nullptr;
    prometheus::Gauge* in_flight = nullptr;
    prometheus::Counter* rejections = nullptr;
    std::uint64_t published = 0;
  };
  std::map<std::string, ConcurrencySeries, std::less<>> concurrency_;
  void remove_concurrency_locked(std::string_view backend);
  std::vector<std::function<void()>> hooks_;
};

/// Histogram buckets for gateway latencies, in seconds: 100 µs to 60 s.
[[nodiscard]] const prometheus::Histogram::BucketBoundaries& latency_buckets();

}  // namespace sluice::metrics
