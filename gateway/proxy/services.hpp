// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <memory>

#include "gateway/core/clock.hpp"
#include "gateway/core/keyed_hash.hpp"
#include "gateway/log/access_log.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/proxy/connection_gate.hpp"
#include "gateway/proxy/snapshot.hpp"

namespace sluice::proxy {

/// What every worker shares. Owned by the Gateway, which outlives every worker thread; each
/// member is thread-safe.
struct Services {
  Services(const core::Clock& c, SnapshotSource& s, ConnectionGate& g, log::AccessLog& a,
           SharedState& sh, std::shared_ptr<spdlog::logger> l)
      : clock(c), snapshots(s), gate(g), access_log(a), shared(sh), log(std::move(l)) {}

  const core::Clock& clock;
  SnapshotSource& snapshots;
  ConnectionGate& gate;
  log::AccessLog& access_log;
  SharedState& shared;  ///< the limit store, breakers and metrics
  std::shared_ptr<spdlog::logger> log;
  /// Hashes user keys for the access log (SPEC §7: never in clear); random per process.
  const core::KeyedHash user_hash = core::KeyedHash::with_random_key();
  /// The memory store's `sluice_store_operations_total{store="memory",result="ok"}`.
  prometheus::Counter* store_ok = nullptr;
  /// Set once on SIGTERM/SIGINT: responses say `Connection: close`, idle connections close.
  std::atomic<bool> draining{false};
};

}  // namespace sluice::proxy
