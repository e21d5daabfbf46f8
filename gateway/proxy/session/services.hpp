// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <memory>

#include "gateway/auth/credential_slot.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/core/keyed_hash.hpp"
#include "gateway/log/access_log.hpp"
#include "gateway/proxy/routing/snapshot.hpp"
#include "gateway/proxy/session/connection_gate.hpp"
#include "gateway/proxy/steps/auth_failure_ledger.hpp"
#include "gateway/store/limit_store.hpp"

namespace sluice::proxy {

/// What every worker shares. Owned by the Gateway, which outlives every worker thread; each
/// member is thread-safe.
struct Services {
  Services(const core::Clock& c, SnapshotSource& s, ConnectionGate& g, log::AccessLog& a,
           store::LimitStore& st, core::KeyedHash uh, std::shared_ptr<spdlog::logger> l)
      : clock(c),
        snapshots(s),
        gate(g),
        access_log(a),
        store(st),
        user_hash(uh),
        log(std::move(l)) {}

  const core::Clock& clock;
  SnapshotSource& snapshots;
  ConnectionGate& gate;
  log::AccessLog& access_log;
  store::LimitStore& store;
  /// Hashes user keys for the access log and admin listings (never in clear: docs/behaviour.md
  /// §7), under the key `access_log.user_hash_key_env` names, else a random one.
  const core::KeyedHash user_hash;
  std::shared_ptr<spdlog::logger> log;
  /// Set once on SIGTERM/SIGINT: answers say `Connection: close`, idle connections close.
  std::atomic<bool> draining{false};
  /// Open upgrade tunnels on every worker (`sluice_tunnels_active`, read at scrape time).
  std::atomic<std::int64_t> tunnels{0};
  /// The credentials in force (docs/identity.md); null: nothing is verified. Set before the
  /// workers are made; owned by the Gateway.
  const auth::CredentialSlot* credentials = nullptr;
  /// `auth.failure_policy`'s counts; null: no flood shedding. Owned by the Gateway.
  AuthFailureLedger* auth_failures = nullptr;
};

/// The snapshot as one worker sees it. Requests hold it through a shared_ptr whose control
/// block is private to the worker, so per-request reference counting never bounces a cache
/// line between threads; the snapshot itself is referenced once per worker.
struct ThreadView {
  std::shared_ptr<const Snapshot> snapshot;
};

/// One worker's cached copy of the current snapshot. Confined to the worker's thread; the source
/// outlives it.
class WorkerView {
 public:
  explicit WorkerView(SnapshotSource& source) : source_(source) {}
  /// The newest snapshot (one atomic load when it did not change).
  [[nodiscard]] const std::shared_ptr<const ThreadView>& current() {
    const std::uint64_t generation = source_.generation();
    if (generation != generation_) {
      view_ = std::make_shared<const ThreadView>(ThreadView{source_.load()});
      generation_ = generation;
    }
    return view_;
  }

 private:
  SnapshotSource& source_;
  std::uint64_t generation_ = ~std::uint64_t{0};
  std::shared_ptr<const ThreadView> view_;
};

}  // namespace sluice::proxy
