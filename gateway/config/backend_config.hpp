// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/endpoint.hpp"

// A backend's part of the validated configuration (docs/behaviour.md "Configuration",
// "Backends"): its endpoints and balancing, breaker, health checks, outlier ejection, retries
// and upstream TLS. Plain value types, read-only once published, like the rest of Config
// (config.hpp).
namespace sluice::config {

enum class Balance { kRoundRobin, kLeastRequest, kRandom };

/// The JSON spelling: "round_robin", "least_request", "random".
std::string_view to_string(Balance balance);

/// What a backend speaks (docs/grpc.md "HTTP/2 to backends"): HTTP/1.1, HTTP/2 over TLS (ALPN
/// `h2`), or HTTP/2 over plain TCP by prior knowledge.
enum class UpstreamProtocol { kHttp1, kH2, kH2c };

/// The JSON spelling: "http1", "h2", "h2c".
std::string_view to_string(UpstreamProtocol protocol);

/// Whether a limit policy or a breaker acts (`enforce`) or only counts what it would have done
/// (`shadow`).
enum class EnforcementMode { kEnforce, kShadow };

/// The JSON spelling: "enforce", "shadow".
std::string_view to_string(EnforcementMode mode);

/// Parameters of the adaptive breaker (docs/behaviour.md "Breakers"); window % buckets == 0 (in
/// ms).
struct BreakerConfig {
  bool enabled = true;
  double k = 1.5;
  double protection = 5;
  std::chrono::milliseconds window{10000};
  std::uint32_t buckets = 40;
  std::vector<int> failure_statuses{500, 502, 503, 504};
  /// gRPC statuses from the backend that count as failures (docs/grpc.md): UNAVAILABLE,
  /// DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED.
  std::vector<int> failure_grpc_statuses{14, 4, 8};
  /// `shadow`: the drop probability is computed and reported, would-be drops are counted
  /// (`sluice_breaker_shadow_drops_total`), nothing is dropped (docs/latency-protection.md).
  EnforcementMode mode = EnforcementMode::kEnforce;
  /// A response head slower than this counts as a failure in the breaker window; 0: off.
  std::chrono::milliseconds slow{0};

  bool operator==(const BreakerConfig&) const = default;
};

/// A backend's active health checks (docs/endpoint-health.md "Active checks"): a GET of `path` on
/// every endpoint every `interval` (±10% jitter), answered within `timeout` by one of
/// `expected_statuses`; `unhealthy_threshold` failures in a row take an endpoint out,
/// `healthy_threshold` passes in a row bring it back.
struct HealthCheckConfig {
  /// `http`: a GET of `path`; `grpc`: the gRPC Health Checking Protocol's
  /// `grpc.health.v1.Health/Check` for `service` over HTTP/2 (docs/grpc.md "Health checks").
  enum class Type { kHttp, kGrpc };
  std::string path = "/healthz";
  std::chrono::milliseconds interval{5000};
  std::chrono::milliseconds timeout{1000};
  std::uint32_t healthy_threshold = 2;
  std::uint32_t unhealthy_threshold = 3;
  std::vector<int> expected_statuses{200};
  Type type = Type::kHttp;
  std::string service;  ///< grpc: the service asked about ("" = the server as a whole)

  bool operator==(const HealthCheckConfig&) const = default;
};

/// Outlier ejection from live traffic (docs/endpoint-health.md "Outlier ejection"):
/// `consecutive_failures` failures in a row (the breaker's failure definition) eject an endpoint
/// for `base_ejection` × times ejected (at most 10×); at most `max_ejection_percent` of the
/// endpoints are ejected at once.
struct OutlierConfig {
  std::uint32_t consecutive_failures = 5;
  std::chrono::milliseconds base_ejection{30000};
  std::uint32_t max_ejection_percent = 50;

  bool operator==(const OutlierConfig&) const = default;
};

/// Retries (docs/endpoint-health.md "Retries"). `on` is a set of upstream results (connect
/// error, reset, timeout) and response statuses.
struct RetryConfig {
  std::uint32_t attempts = 2;  ///< attempts in all, the first included (1..5)
  bool on_connect_error = true;
  bool on_reset = true;
  bool on_timeout = true;
  std::vector<int> on_statuses{502, 503, 504};
  std::chrono::milliseconds backoff{25};
  std::uint32_t budget_percent = 20;
  std::uint32_t min_retry_concurrency = 3;
  bool non_idempotent = false;

  bool operator==(const RetryConfig&) const = default;
};

/// A backend's adaptive concurrency limit (docs/latency-protection.md "Adaptive concurrency"):
/// requests in flight to the backend are held under a limit that follows its latency, between
/// `min` and `max`.
struct ConcurrencyConfig {
  bool enabled = true;
  std::uint32_t min = 4;
  std::uint32_t max = 1000;

  bool operator==(const ConcurrencyConfig&) const = default;
};

/// A backend's `tls` object (docs/tls.md "Upstream TLS"): how sluice speaks TLS to it.
struct BackendTlsConfig {
  bool enabled = true;
  std::optional<std::string> ca;           // PEM file to verify against; null = the system store
  bool verify = true;                      // false: any certificate (logged at start)
  std::optional<std::string> server_name;  // SNI and the name verified; null = the endpoint host
  std::optional<std::string> cert;         // client certificate (mTLS to the backend), with key
  std::optional<std::string> key;

  bool operator==(const BackendTlsConfig&) const = default;
};

struct BackendConfig {
  std::vector<Endpoint> endpoints;  // non-empty, no duplicates
  Balance balance = Balance::kRoundRobin;
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds timeout{15000};
  std::uint32_t max_idle_per_endpoint = 64;
  UpstreamProtocol protocol = UpstreamProtocol::kHttp1;
  std::uint32_t max_streams_per_connection = 100;  // h2/h2c: streams sharing one connection
  BreakerConfig breaker;
  std::optional<BackendTlsConfig> tls;            // set and enabled: connections to it speak TLS
  std::optional<HealthCheckConfig> health_check;  // absent: no active checks
  std::optional<OutlierConfig> outlier;           // absent: no outlier ejection
  std::optional<RetryConfig> retry;               // absent: no retries
  std::optional<ConcurrencyConfig> concurrency;   // absent: no concurrency limit

  bool operator==(const BackendConfig&) const = default;
  [[nodiscard]] bool speaks_tls() const noexcept { return tls && tls->enabled; }
};

}  // namespace sluice::config
