// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <prometheus/counter.h>

#include <memory>
#include <optional>
#include <string>

#include "gateway/config/config.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/core/random.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/store/memory_store.hpp"
#include "gateway/store/redis_store.hpp"

namespace sluice::app {

/// The limit store `store.type` asks for, with its `sluice_store_*` metrics wired: every series
/// exists from the start. Exactly one of `memory` and `redis` is set (both point into `store`).
/// The clock, random source and metrics outlive it.
struct StoreSetup {
  std::unique_ptr<store::LimitStore> store;
  store::MemoryStore* memory = nullptr;
  store::RedisStore* redis = nullptr;
  /// The memory store's `result="ok"` counter (the data path counts its decisions; the Redis
  /// store counts its own).
  prometheus::Counter* memory_ok = nullptr;
  /// Why the store cannot work (a password variable that is not set): a startup error.
  std::optional<std::string> error;

  /// Forgets idle keys (the memory store, or the Redis store's local fallback).
  void sweep_idle() const {
    if (memory != nullptr) {
      memory->sweep_idle();
    } else if (redis != nullptr) {
      redis->sweep_idle();
    }
  }
};

[[nodiscard]] StoreSetup make_store(const config::StoreConfig& config, const core::Clock& clock,
                                    core::Random& random, metrics::Metrics& metrics);

}  // namespace sluice::app
