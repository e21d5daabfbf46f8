// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "gateway/config/config.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/core/random.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/store/limit_store.hpp"

namespace sluice::app {

/// The limit store `store.type` asks for, with its `sluice_store_*` metrics wired (every series
/// exists from the start): the memory store's decisions are counted at scrape time, the Redis
/// store reports each operation and each fallback change. The rest of the gateway sees only
/// store::LimitStore. The clock, random source and metrics outlive it.
struct StoreSetup {
  std::unique_ptr<store::LimitStore> store;
  /// Why the store cannot work (a password variable that is not set): a startup error.
  std::optional<std::string> error;
};

[[nodiscard]] StoreSetup make_store(const config::StoreConfig& config, const core::Clock& clock,
                                    core::Random& random, metrics::Metrics& metrics);

}  // namespace sluice::app
