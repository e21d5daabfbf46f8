// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <map>
#include <memory>
#include <memory_resource>
#include <string>
#include <utility>

#include "gateway/core/clock.hpp"
#include "gateway/health/health_registry.hpp"
#include "gateway/proxy/io/deadline.hpp"
#include "gateway/proxy/io/net.hpp"
#include "gateway/proxy/routing/snapshot.hpp"
#include "gateway/proxy/upstream/h2_connector.hpp"
#include "gateway/proxy/upstream/tcp_connector.hpp"

namespace sluice::proxy {

/// Active health checks (docs/endpoint-health.md "Active checks"): for every backend of the
/// current snapshot with a `health_check`, a `GET path` to each endpoint every `interval`
/// (±10% jitter), over TCP or TLS as the backend speaks (the data path's connector), answered
/// within `timeout` by one of `expected_statuses`. Results go to the backend's EndpointHealth;
/// a state change is logged once. One checker per gateway, on one thread (the control thread),
/// so an endpoint gets one check per interval however many workers there are. Confined to its
/// executor's thread; the clock, the snapshot source and the registry outlive it.
class HealthChecker {
 public:
  HealthChecker(const Executor& executor, const core::Clock& clock, const SnapshotSource& snapshots,
                health::HealthRegistry& registry, std::shared_ptr<spdlog::logger> log);
  HealthChecker(const HealthChecker&) = delete;
  HealthChecker& operator=(const HealthChecker&) = delete;
  ~HealthChecker();

  /// Starts checking (every `tick` it looks for checks that are due).
  void start(core::Duration tick = std::chrono::milliseconds(50));
  /// Stops scheduling checks; checks in flight finish or time out on their own.
  void stop();

  /// Checks done since start (for tests and logs).
  [[nodiscard]] std::uint64_t checks() const noexcept { return checks_; }

 private:
  struct Due {
    core::TimePoint next{};
    bool running = false;
  };
  void schedule(core::Duration tick);
  void run_due(core::TimePoint now);
  Task<void> check(std::shared_ptr<const Snapshot> snapshot, std::size_t backend,
                   std::size_t endpoint, std::shared_ptr<health::EndpointHealth> health);
  /// Whether one check passed; `why` says how it failed.
  Task<bool> probe(const UpstreamEndpoint& endpoint, const config::HealthCheckConfig& check,
                   std::string& why);
  core::Duration jittered(core::Duration interval) noexcept;

  Executor executor_;
  const core::Clock& clock_;
  const SnapshotSource& snapshots_;
  health::HealthRegistry& registry_;
  std::shared_ptr<spdlog::logger> log_;
  std::pmr::unsynchronized_pool_resource ops_;
  DeadlineSweep sweep_;
  TcpConnector tcp_connector_;
  H2Connector connector_;  ///< an h2/h2c endpoint is checked over HTTP/2, as requests reach it
  net::basic_waitable_timer<std::chrono::steady_clock, net::wait_traits<std::chrono::steady_clock>,
                            Executor>
      timer_;
  std::map<std::pair<std::string, std::string>, Due> due_;  ///< (backend, endpoint)
  BalanceCursor random_;                                    ///< only its random source: the jitter
  std::uint64_t checks_ = 0;
  bool running_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sluice::proxy
