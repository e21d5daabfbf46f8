// SPDX-License-Identifier: Apache-2.0
#include "gateway/metrics/metrics.hpp"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <iterator>
#include <set>

#include "gateway/metrics/process_metrics.hpp"

namespace sluice::metrics {
namespace {

constexpr std::array<std::string_view, kUpstreamOutcomes> kOutcomeNames{
    "success", "failure", "timeout", "connect_error", "reset"};
constexpr std::array<std::string_view, kRetryResults> kRetryNames{"attempted", "succeeded",
                                                                  "budget_exhausted"};
constexpr std::array<std::string_view, kLimitResults> kResultNames{"allowed", "limited",
                                                                   "shadow_limited"};

template <typename Builder>
auto& build(Builder builder, const char* name, const char* help, prometheus::Registry& registry) {
  return builder.Name(name).Help(help).Register(registry);
}

}  // namespace

const prometheus::Histogram::BucketBoundaries& latency_buckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
  return kBuckets;
}

void RouteMetrics::record(unsigned status, double seconds) {
  counter_for(status).Increment();
  duration_.Observe(seconds);
}

prometheus::Counter& RouteMetrics::counter_for(unsigned status) {
  if (status < 100 || status > 599) {
    status = 499;
  }
  auto& slot = by_status_[status - 100];
  if (auto* counter = slot.load(std::memory_order_acquire)) {
    return *counter;
  }
  std::lock_guard lock(create_mutex_);
  auto* counter =
      &requests_.Add({{"route", route_}, {"backend", backend_}, {"code", std::to_string(status)}});
  slot.store(counter, std::memory_order_release);
  return *counter;
}

void AuthMetrics::count(std::size_t method, std::string_view method_name, std::size_t result,
                        std::string_view result_name) {
  auto& slot = counters_[method * kResults + result];
  if (auto* counter = slot.load(std::memory_order_acquire)) {
    counter->Increment();
    return;
  }
  std::lock_guard lock(create_mutex_);
  auto* counter = &family_.Add({{"route", route_},
                                {"method", std::string(method_name)},
                                {"result", std::string(result_name)}});
  slot.store(counter, std::memory_order_release);
  counter->Increment();
}

void AuthMetrics::remove_series() {
  std::lock_guard lock(create_mutex_);
  for (auto& slot : counters_) {
    if (auto* counter = slot.exchange(nullptr)) {
      family_.Remove(counter);
    }
  }
}

void GrpcMetrics::count(int grpc_status) {
  const auto status =
      grpc_status >= 0 && grpc_status < static_cast<int>(kStatuses) ? grpc_status : 2;
  auto& slot = counters_[static_cast<std::size_t>(status)];
  if (auto* counter = slot.load(std::memory_order_acquire)) {
    counter->Increment();
    return;
  }
  std::lock_guard lock(create_mutex_);
  auto* counter = slot.load(std::memory_order_acquire);
  if (counter == nullptr) {
    counter = &family_.Add({{"route", route_}, {"grpc_status", std::to_string(status)}});
    slot.store(counter, std::memory_order_release);
  }
  counter->Increment();
}

void GrpcMetrics::remove_series() {
  std::lock_guard lock(create_mutex_);
  for (auto& slot : counters_) {
    if (auto* counter = slot.exchange(nullptr)) {
      family_.Remove(counter);
    }
  }
}

void RouteMetrics::remove_series(prometheus::Family<prometheus::Histogram>* durations) {
  std::lock_guard lock(create_mutex_);
  for (auto& slot : by_status_) {
    if (auto* counter = slot.exchange(nullptr)) {
      requests_.Remove(counter);
    }
  }
  if (durations != nullptr) {
    durations->Remove(&duration_);
  }
}

Metrics::Metrics(std::string_view version) : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  using prometheus::BuildHistogram;
  requests_ = &build(BuildCounter(), "sluice_requests_total",
                     "Requests answered, by route, backend and status code.", r);
  request_duration_ = &build(BuildHistogram(), "sluice_request_duration_seconds",
                             "Time from the request head to the end of the response, by route.", r);
  upstream_requests_ = &build(BuildCounter(), "sluice_upstream_requests_total",
                              "Requests sent upstream, by backend and outcome.", r);
  upstream_duration_ =
      &build(BuildHistogram(), "sluice_upstream_duration_seconds",
             "Time from sending a request upstream to its response head, by backend.", r);
  ratelimit_requests_ = &build(BuildCounter(), "sluice_ratelimit_requests_total",
                               "Rate-limit decisions, by policy and result.", r);
  tracked_keys_ = &build(BuildGauge(), "sluice_ratelimit_tracked_keys",
                         "User keys holding limiter state, by policy.", r);
  breaker_drops_ = &build(BuildCounter(), "sluice_breaker_drops_total",
                          "Requests the adaptive breaker dropped (answered 503), by backend.", r);
  breaker_shadow_drops_ =
      &build(BuildCounter(), "sluice_breaker_shadow_drops_total",
             "Requests a breaker in shadow mode would have dropped (and sent on), by backend.", r);
  slow_calls_ = &build(BuildCounter(), "sluice_breaker_slow_calls_total",
                       "Responses slower than breaker.slow_ms, counted as breaker failures, by "
                       "backend.",
                       r);
  concurrency_limit_ =
      &build(BuildGauge(), "sluice_backend_concurrency_limit",
             "The adaptive concurrency limit of the backend (requests in flight).", r);
  inflight_ = &build(BuildGauge(), "sluice_backend_inflight",
                     "Requests in flight to the backend, under its concurrency limit.", r);
  concurrency_rejections_ =
      &build(BuildCounter(), "sluice_concurrency_rejections_total",
             "Requests answered 503 backend_overloaded by the concurrency limit, by backend.", r);
  drop_probability_ = &build(BuildGauge(), "sluice_breaker_drop_probability",
                             "The breaker's current drop probability, by backend.", r);
  window_requests_ = &build(BuildGauge(), "sluice_breaker_window_requests",
                            "Completed upstream requests in the breaker window, by backend.", r);
  window_accepts_ = &build(BuildGauge(), "sluice_breaker_window_accepts",
                           "Accepted upstream requests in the breaker window, by backend.", r);
  downstream_ =
      &build(BuildGauge(), "sluice_downstream_connections", "Open client connections.", r);
  tunnels_ = &build(BuildGauge(), "sluice_tunnels_active",
                    "Open upgrade tunnels (WebSocket and other Upgrade protocols).", r);
  upstream_connections_ = &build(BuildGauge(), "sluice_upstream_connections",
                                 "Open upstream connections, by backend and state.", r);
  store_operations_ = &build(BuildCounter(), "sluice_store_operations_total",
                             "Limit store operations, by store and result.", r);
  store_fallback_ = &build(BuildGauge(), "sluice_store_fallback_active",
                           "1 while the limit store's on_error fallback is in force.", r);
  store_sync_ = &build(BuildHistogram(), "sluice_store_sync_seconds",
                       "Hybrid mode: one thread's exchange of per-key deltas with the store.", r);
  store_sync_errors_ = &build(BuildCounter(), "sluice_store_sync_errors_total",
                              "Hybrid mode: exchanges with the store that failed.", r);
  auth_ = &build(BuildCounter(), "sluice_auth_total",
                 "Credential checks, by route, method (jwt, api_key, none) and result.", r);
  grpc_requests_ = &build(BuildCounter(), "sluice_grpc_requests_total",
                          "gRPC calls answered, by route and the gRPC status they ended with.", r);
  jwks_refreshes_ = &build(BuildCounter(), "sluice_jwks_refreshes_total",
                           "JWKS fetches from auth.jwt.jwks_url, by result.", r);
  tls_handshakes_ = &build(BuildCounter(), "sluice_tls_handshakes_total",
                           "TLS handshakes on the data path, by listener and result.", r);
  tls_certificate_expiry_ =
      &build(BuildGauge(), "sluice_tls_certificate_expiry_timestamp_seconds",
             "When each served certificate expires (notAfter, Unix seconds), by listener and "
             "index in its certificates list.",
             r);
  tls_ocsp_staple_expiry_ =
      &build(BuildGauge(), "sluice_tls_ocsp_staple_expiry_timestamp_seconds",
             "When each certificate's stapled OCSP response goes stale (nextUpdate, Unix "
             "seconds; 0: nothing stapled), by listener and index in its certificates list.",
             r);
  http2_goaways_ = &build(BuildCounter(), "sluice_http2_goaways_total",
                          "HTTP/2 GOAWAY frames sent to clients, by listener and error code.", r);
  reloads_ =
      &build(BuildCounter(), "sluice_config_reloads_total", "Configuration reloads, by result.", r);
  admin_changes_ = &build(BuildCounter(), "sluice_admin_changes_total",
                          "Accepted admin API changes, by resource.", r);
  access_log_dropped_ = &build(BuildCounter(), "sluice_access_log_dropped_total",
                               "Access log lines lost because the writer could not keep up.", r)
                             .Add({});
  retries_ = &build(BuildCounter(), "sluice_retries_total",
                    "Retries of upstream requests, by backend and result (attempted, succeeded, "
                    "budget_exhausted).",
                    r);
  panic_picks_ = &build(BuildCounter(), "sluice_endpoint_panic_picks_total",
                        "Endpoint picks made among all endpoints because none was pickable "
                        "(panic), by backend.",
                        r);
  endpoint_healthy_ = &build(BuildGauge(), "sluice_endpoint_healthy",
                             "1 while an endpoint is pickable (healthy), 0 while it is unhealthy, "
                             "ejected or draining; by backend and endpoint.",
                             r);
  endpoint_ejections_ = &build(BuildCounter(), "sluice_endpoint_ejections_total",
                               "Outlier ejections, by backend and endpoint.", r);
  build(BuildGauge(), "sluice_build_info", "Build information; the value is always 1.", r)
      .Add({{"version", std::string(version)}})
      .Set(1);
  downstream_->Add({});
  tunnels_->Add({});
  reloads_->Add({{"result", "ok"}});
  reloads_->Add({{"result", "error"}});
}

void Metrics::publish_concurrency(std::string_view backend,
                                  const std::optional<ConcurrencySample>& sample) {
  std::lock_guard lock(mutex_);
  if (!sample) {
    remove_concurrency_locked(backend);
    return;
  }
  auto it = concurrency_.find(backend);
  if (it == concurrency_.end()) {
    const std::string b(backend);
    it = concurrency_
             .emplace(b, ConcurrencySeries{.limit = &concurrency_limit_->Add({{"backend", b}}),
                                           .in_flight = &inflight_->Add({{"backend", b}}),
                                           .rejections =
                                               &concurrency_rejections_->Add({{"backend", b}})})
             .first;
  }
  ConcurrencySeries& s = it->second;
  s.limit->Set(static_cast<double>(sample->limit));
  s.in_flight->Set(static_cast<double>(sample->in_flight));
  if (sample->rejections > s.published) {
    s.rejections->Increment(static_cast<double>(sample->rejections - s.published));
  }
  s.published = sample->rejections;
}

void Metrics::remove_concurrency_locked(std::string_view backend) {
  const auto it = concurrency_.find(backend);
  if (it == concurrency_.end()) {
    return;
  }
  concurrency_limit_->Remove(it->second.limit);
  inflight_->Remove(it->second.in_flight);
  concurrency_rejections_->Remove(it->second.rejections);
  concurrency_.erase(it);
}

RouteMetrics& Metrics::route(std::string_view route, std::string_view backend) {
  std::lock_guard lock(mutex_);
  auto key = std::make_pair(std::string(route), std::string(backend));
  auto& slot = routes_[key];
  if (!slot) {
    auto& duration = request_duration_->Add({{"route", key.first}}, latency_buckets());
    // Another pair of the route shares its auth series (labelled by route alone).
    std::shared_ptr<AuthMetrics> auth;
    std::shared_ptr<GrpcMetrics> grpc;
    for (const auto& [other, metrics] : routes_) {
      if (other.first == key.first && metrics) {
        auth = metrics->auth_shared();
        grpc = metrics->grpc_shared();
        break;
      }
    }
    if (!auth) {
      auth = std::make_shared<AuthMetrics>(*auth_, key.first);
      grpc = std::make_shared<GrpcMetrics>(*grpc_requests_, key.first);
    }
    slot = std::make_unique<RouteMetrics>(*requests_, duration, key.first, key.second,
                                          std::move(auth), std::move(grpc));
  }
  return *slot;
}

BackendMetrics& Metrics::backend(std::string_view name) {
  std::lock_guard lock(mutex_);
  auto& slot = backends_[std::string(name)];
  if (!slot) {
    const std::string b(name);
    slot = std::make_unique<BackendMetrics>();
    for (std::size_t i = 0; i < kUpstreamOutcomes; ++i) {
      slot->upstream[i] =
          &upstream_requests_->Add({{"backend", b}, {"outcome", std::string(kOutcomeNames[i])}});
    }
    slot->upstream_duration = &upstream_duration_->Add({{"backend", b}}, latency_buckets());
    slot->breaker_drops = &breaker_drops_->Add({{"backend", b}});
    slot->breaker_shadow_drops = &breaker_shadow_drops_->Add({{"backend", b}});
    slot->slow_calls = &slow_calls_->Add({{"backend", b}});
    slot->drop_probability = &drop_probability_->Add({{"backend", b}});
    slot->window_requests = &window_requests_->Add({{"backend", b}});
    slot->window_accepts = &window_accepts_->Add({{"backend", b}});
    slot->connections_active = &upstream_connections_->Add({{"backend", b}, {"state", "active"}});
    slot->connections_idle = &upstream_connections_->Add({{"backend", b}, {"state", "idle"}});
    for (std::size_t i = 0; i < kRetryResults; ++i) {
      slot->retries[i] = &retries_->Add({{"backend", b}, {"result", std::string(kRetryNames[i])}});
    }
    slot->panic_picks = &panic_picks_->Add({{"backend", b}});
  }
  return *slot;
}

PolicyMetrics& Metrics::policy(std::string_view name) {
  std::lock_guard lock(mutex_);
  auto& slot = policies_[std::string(name)];
  if (!slot) {
    const std::string p(name);
    slot = std::make_unique<PolicyMetrics>();
    for (std::size_t i = 0; i < kLimitResults; ++i) {
      slot->results[i] =
          &ratelimit_requests_->Add({{"policy", p}, {"result", std::string(kResultNames[i])}});
    }
    slot->tracked_keys = &tracked_keys_->Add({{"policy", p}});
  }
  return *slot;
}

void Metrics::remove_route(std::string_view route, std::string_view backend) {
  std::lock_guard lock(mutex_);
  const auto it = routes_.find(std::make_pair(std::string(route), std::string(backend)));
  if (it == routes_.end()) {
    return;
  }
  // The latency histogram is labelled by route alone: another pair of the same route keeps it.
  const bool shared = std::any_of(routes_.begin(), routes_.end(), [&](const auto& entry) {
    return entry.first.first == route && entry.first.second != backend;
  });
  it->second->remove_series(shared ? nullptr : request_duration_);
  if (!shared) {
    it->second->auth().remove_series();
    it->second->grpc().remove_series();
  }
  routes_.erase(it);
}

void Metrics::remove_backend(std::string_view name) {
  std::lock_guard lock(mutex_);
  const auto it = backends_.find(name);
  if (it == backends_.end()) {
    return;
  }
  BackendMetrics& b = *it->second;
  for (auto* counter : b.upstream) {
    upstream_requests_->Remove(counter);
  }
  upstream_duration_->Remove(b.upstream_duration);
  breaker_drops_->Remove(b.breaker_drops);
  breaker_shadow_drops_->Remove(b.breaker_shadow_drops);
  slow_calls_->Remove(b.slow_calls);
  remove_concurrency_locked(name);
  drop_probability_->Remove(b.drop_probability);
  window_requests_->Remove(b.window_requests);
  window_accepts_->Remove(b.window_accepts);
  upstream_connections_->Remove(b.connections_active);
  upstream_connections_->Remove(b.connections_idle);
  for (auto* counter : b.retries) {
    retries_->Remove(counter);
  }
  panic_picks_->Remove(b.panic_picks);
  backends_.erase(it);
  panic_published_.erase(std::string(name));
  if (const auto series = endpoints_.find(name); series != endpoints_.end()) {
    for (auto& [endpoint, s] : series->second) {
      endpoint_healthy_->Remove(s.healthy);
      endpoint_ejections_->Remove(s.ejections);
    }
    endpoints_.erase(series);
  }
}

void Metrics::publish_endpoints(std::string_view backend,
                                const std::vector<EndpointSample>& samples,
                                std::uint64_t panic_picks) {
  std::lock_guard lock(mutex_);
  const auto owner = backends_.find(backend);
  if (owner == backends_.end()) {
    return;  // removed meanwhile: its series are gone
  }
  const std::string b(backend);
  auto& published = panic_published_[b];
  if (panic_picks > published) {
    owner->second->panic_picks->Increment(static_cast<double>(panic_picks - published));
  }
  published = panic_picks;
  auto& series = endpoints_[b];
  std::set<std::string, std::less<>> present;
  for (const auto& sample : samples) {
    present.insert(sample.endpoint);
    auto& s = series[sample.endpoint];
    if (s.healthy == nullptr) {
      const prometheus::Labels labels{{"backend", b}, {"endpoint", sample.endpoint}};
      s.healthy = &endpoint_healthy_->Add(labels);
      s.ejections = &endpoint_ejections_->Add(labels);
    }
    s.healthy->Set(sample.healthy ? 1 : 0);
    if (sample.ejections > s.published) {
      s.ejections->Increment(static_cast<double>(sample.ejections - s.published));
    }
    s.published = sample.ejections;
  }
  for (auto it = series.begin(); it != series.end();) {
    if (present.contains(it->first)) {
      ++it;
      continue;
    }
    endpoint_healthy_->Remove(it->second.healthy);
    endpoint_ejections_->Remove(it->second.ejections);
    it = series.erase(it);
  }
}

void Metrics::remove_policy(std::string_view name) {
  std::lock_guard lock(mutex_);
  const auto it = policies_.find(name);
  if (it == policies_.end()) {
    return;
  }
  for (auto* counter : it->second->results) {
    ratelimit_requests_->Remove(counter);
  }
  tracked_keys_->Remove(it->second->tracked_keys);
  policies_.erase(it);
}

prometheus::Counter& Metrics::store_operation(std::string_view store, std::string_view result) {
  return store_operations_->Add({{"store", std::string(store)}, {"result", std::string(result)}});
}

prometheus::Gauge& Metrics::store_fallback(std::string_view store) {
  return store_fallback_->Add({{"store", std::string(store)}});
}

prometheus::Histogram& Metrics::store_sync(std::string_view store) {
  return store_sync_->Add({{"store", std::string(store)}}, latency_buckets());
}

prometheus::Counter& Metrics::store_sync_errors(std::string_view store) {
  return store_sync_errors_->Add({{"store", std::string(store)}});
}

prometheus::Counter& Metrics::tls_handshakes(std::string_view listener, std::string_view result) {
  return tls_handshakes_->Add(
      {{"listener", std::string(listener)}, {"result", std::string(result)}});
}

prometheus::Gauge& Metrics::tls_certificate_expiry(std::string_view listener,
                                                   std::size_t certificate) {
  return tls_certificate_expiry_->Add(
      {{"listener", std::string(listener)}, {"certificate", std::to_string(certificate)}});
}

prometheus::Gauge& Metrics::tls_ocsp_staple_expiry(std::string_view listener,
                                                   std::size_t certificate) {
  return tls_ocsp_staple_expiry_->Add(
      {{"listener", std::string(listener)}, {"certificate", std::to_string(certificate)}});
}

prometheus::Counter& Metrics::http2_goaways(std::string_view listener, std::string_view error) {
  return http2_goaways_->Add({{"listener", std::string(listener)}, {"error", std::string(error)}});
}

void Metrics::count_reload(bool ok) {
  reloads_->Add({{"result", ok ? "ok" : "error"}}).Increment();
}

prometheus::Counter& Metrics::jwks_refreshes(std::string_view result) {
  return jwks_refreshes_->Add({{"result", std::string(result)}});
}

prometheus::Counter& Metrics::admin_changes(std::string_view resource) {
  return admin_changes_->Add({{"resource", std::string(resource)}});
}

void Metrics::on_scrape(std::function<void()> hook) {
  std::lock_guard lock(mutex_);
  hooks_.push_back(std::move(hook));
}

std::string Metrics::scrape() {
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard lock(mutex_);
    hooks = hooks_;
  }
  for (const auto& hook : hooks) {  // unlocked: hooks may ask for labelled metrics
    hook();
  }
  {
    std::lock_guard lock(mutex_);
    for (const auto& [name, b] : backends_) {
      const ConnectionCounts& c = *b->connections;
      b->connections_active->Set(static_cast<double>(c.active.load(std::memory_order_relaxed)));
      b->connections_idle->Set(static_cast<double>(c.idle.load(std::memory_order_relaxed)));
    }
  }
  auto families = registry_->Collect();
  auto process = collect_process_metrics();
  families.insert(families.end(), std::make_move_iterator(process.begin()),
                  std::make_move_iterator(process.end()));
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace sluice::metrics
