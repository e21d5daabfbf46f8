// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/breaker/breaker_registry.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/health/health_registry.hpp"

namespace sluice::insight {

/// The data path's state as the event feed reports it, at one instant.
struct StateSample {
  std::map<std::string, double, std::less<>> breakers;  ///< backend -> drop probability
  bool store_fallback = false;
  /// (backend, endpoint) -> state name (health::to_string).
  std::map<std::pair<std::string, std::string>, std::string> endpoints;
};

/// One event to publish: its type and data (docs/operating.md "Live events").
struct StateEvent {
  std::string type;
  nlohmann::json data;
};

/// The events that lead from `before` to `after`: `breaker_open` {backend, drop_probability}
/// when a drop probability leaves 0 (a new backend counts as 0 before), `breaker_close`
/// {backend} when it reaches 0 or an open breaker's backend is gone, `store_fallback` {on}, and
/// `endpoint_state` {backend, endpoint, from, to} for an endpoint present in both whose state
/// differs. In that order; by name within a type. Pure.
[[nodiscard]] std::vector<StateEvent> state_changes(const StateSample& before,
                                                    const StateSample& after);

/// Each breaker's drop probability, one point per record() (the watcher records every 5 s),
/// the last `length` points per backend (60: five minutes). A backend not in a record is
/// forgotten. Not thread-safe.
class BreakerHistory {
 public:
  explicit BreakerHistory(std::size_t length = 60) : length_(length) {}

  void record(const std::map<std::string, double, std::less<>>& breakers);
  /// `{"interval_ms": interval, "backends": {"NAME": [p, ...]}}`, oldest point first.
  [[nodiscard]] nlohmann::json to_json(std::chrono::milliseconds interval) const;

 private:
  std::size_t length_;
  std::map<std::string, std::deque<double>, std::less<>> series_;
};

/// Samples the data path's state every 250 ms on the admin thread (breaker drop probabilities,
/// the store's fallback, endpoint states) and publishes what changed (state_changes) to the
/// event feed, so workers never do event work (docs/decisions/0016-live-event-feed.md). Keeps
/// the breakers' history for `GET /admin/insight/breakers`.
///
/// Confined to the thread of `executor`. The registries, the clock and the functions must
/// outlive it; destroy it before its executor's io_context.
class StateWatcher {
 public:
  static constexpr std::chrono::milliseconds kPollInterval{250};
  static constexpr std::chrono::milliseconds kHistoryInterval{5000};

  struct Sources {
    breaker::BreakerRegistry& breakers;
    health::HealthRegistry& health;
    /// Whether the limit store's on_error fallback is in force now.
    std::function<bool()> store_fallback;
  };
  using Publish = std::function<void(std::string_view type, nlohmann::json data)>;

  StateWatcher(const boost::asio::any_io_executor& executor, const core::Clock& clock,
               Sources sources, Publish publish);

  /// Takes the baseline (publishing nothing) and polls every kPollInterval until stop().
  void start();
  void stop();

  /// The state now (reads the registries; snapshots the breakers' windows).
  [[nodiscard]] StateSample sample() const;
  /// Makes the state now the one later polls compare with, and records a history point.
  void take_baseline();
  /// One poll: publishes what changed since the previous one, and records a history point
  /// when kHistoryInterval has passed since the last. The timer calls it; so can tests.
  void poll();

  [[nodiscard]] nlohmann::json breaker_history() const {
    return history_.to_json(kHistoryInterval);
  }

 private:
  void schedule();
  void record_history(const StateSample& now_state, core::TimePoint now);

  const core::Clock& clock_;
  Sources sources_;
  Publish publish_;
  boost::asio::steady_timer timer_;
  StateSample last_;
  BreakerHistory history_;
  core::TimePoint next_history_{};
  bool running_ = false;
};

}  // namespace sluice::insight
