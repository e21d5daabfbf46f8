// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/core/clock.hpp"

namespace sluice::health {

/// Where an endpoint stands (docs/endpoint-health.md "States"). Only kHealthy is pickable.
enum class EndpointState : std::uint8_t { kHealthy, kUnhealthy, kEjected, kDraining };
[[nodiscard]] std::string_view to_string(EndpointState state) noexcept;

/// One endpoint as GET /admin/backends/{b}/endpoints lists it.
struct EndpointView {
  std::string endpoint;
  EndpointState state = EndpointState::kHealthy;
  std::uint32_t active_requests = 0;
  std::uint32_t consecutive_failures = 0;
  core::TimePoint ejected_until{};  ///< the epoch when not ejected
  std::uint64_t ejections = 0;      ///< since the gateway started (or the endpoint was added)
};

/// What one active check result changed.
enum class CheckChange : std::uint8_t { kNone, kBecameUnhealthy, kBecameHealthy };

/// The health of one backend's endpoints (docs/endpoint-health.md), shared by every worker
/// thread, the health checker and the admin API, and kept across config versions while the
/// endpoint list stays the same (a new list gets a new object that inherits the state of the
/// endpoints it keeps). An endpoint is pickable unless an active check marked it unhealthy, live
/// traffic ejected it (until its ejection ends), or an operator set it draining.
///
/// Thread-safe. The data path's calls (pickable(), the in-flight counts, record()) are relaxed
/// atomics on per-endpoint cache lines; a mutex guards ejection decisions, check streaks and
/// configuration, which are rare.
class EndpointHealth {
 public:
  explicit EndpointHealth(std::vector<std::string> labels);
  EndpointHealth(const EndpointHealth&) = delete;
  EndpointHealth& operator=(const EndpointHealth&) = delete;
  ~EndpointHealth();

  /// Applies a config version's outlier and check settings (absent: that mechanism is off, and
  /// what it had marked is cleared).
  void configure(const std::optional<config::OutlierConfig>& outlier,
                 const std::optional<config::HealthCheckConfig>& check);
  /// Takes over the state of every endpoint of `previous` that this one has too (same label).
  void inherit(const EndpointHealth& previous);

  [[nodiscard]] std::size_t size() const noexcept { return labels_.size(); }
  [[nodiscard]] const std::string& label(std::size_t i) const noexcept { return labels_[i]; }
  /// The index of `label`, or nullopt.
  [[nodiscard]] std::optional<std::size_t> find(std::string_view label) const noexcept;

  // The data path.
  [[nodiscard]] bool pickable(std::size_t i, core::TimePoint now) const noexcept;
  /// False while every endpoint is pickable (the balancer's fast path).
  [[nodiscard]] bool any_out() const noexcept { return out_.load(std::memory_order_relaxed) != 0; }
  [[nodiscard]] std::uint32_t in_flight(std::size_t i) const noexcept {
    return slots_[i].in_flight.load(std::memory_order_relaxed);
  }
  void add_in_flight(std::size_t i) const noexcept {
    slots_[i].in_flight.fetch_add(1, std::memory_order_relaxed);
  }
  void remove_in_flight(std::size_t i) const noexcept {
    slots_[i].in_flight.fetch_sub(1, std::memory_order_relaxed);
  }
  /// Records a live request's upstream result (`failed` by the breaker's failure definition)
  /// for outlier detection. True when this result ejected the endpoint.
  bool record(std::size_t i, bool failed, core::TimePoint now);
  /// Panic bookkeeping: the balancer found nothing pickable (true) or something again (false).
  /// True when that changed the backend's panic state (for one log line per change).
  bool set_panic(bool panic) noexcept {
    if (panic_.load(std::memory_order_relaxed) == panic) {
      return false;
    }
    return panic_.exchange(panic, std::memory_order_relaxed) != panic;
  }
  [[nodiscard]] std::uint64_t panics() const noexcept {
    return panics_.load(std::memory_order_relaxed);
  }
  void count_panic() noexcept { panics_.fetch_add(1, std::memory_order_relaxed); }

  /// Takes a slot for one retry in flight if retries in flight stay within
  /// max(`min_concurrency`, `percent`% of the requests in flight to every endpoint). False when
  /// the budget is spent. Pair with end_retry().
  bool start_retry(std::uint32_t min_concurrency, std::uint32_t percent) noexcept;
  void end_retry() noexcept { retries_.fetch_sub(1, std::memory_order_relaxed); }
  [[nodiscard]] std::uint32_t retries_in_flight() const noexcept {
    return retries_.load(std::memory_order_relaxed);
  }

  // The health checker.
  /// Records an active check's result against the thresholds.
  CheckChange check_result(std::size_t i, bool passed);

  // The admin API.
  /// Sets or clears draining. False when the endpoint is unknown.
  bool set_draining(std::string_view label, bool draining);

  // Reading.
  [[nodiscard]] EndpointState state(std::size_t i, core::TimePoint now) const noexcept;
  [[nodiscard]] std::vector<EndpointView> view(core::TimePoint now) const;
  /// Ends the ejections that are over at `now` (their endpoints pickable again). Returns their
  /// indexes (for one log line each). The health monitor calls it every tick.
  std::vector<std::size_t> end_ejections(core::TimePoint now);

 private:
  struct alignas(64) Slot {
    mutable std::atomic<std::uint32_t> in_flight{0};
    std::atomic<std::uint32_t> consecutive_failures{0};
    std::atomic<std::int64_t> ejected_until{0};  ///< clock ticks; 0: not ejected
    std::atomic<bool> unhealthy{false};
    std::atomic<bool> draining{false};
    // Guarded by mutex_:
    std::uint32_t times_ejected = 0;
    core::TimePoint last_ejection_end{};
    std::uint32_t check_passes = 0;
    std::uint32_t check_failures = 0;
    std::uint64_t ejections = 0;
  };
  /// Recomputes out_ from the flags (callers hold mutex_).
  void recount_locked() noexcept;
  bool eject_locked(Slot& slot, core::TimePoint now);

  std::vector<std::string> labels_;
  std::unique_ptr<Slot[]> slots_;      // NOLINT(modernize-avoid-c-arrays): atomics cannot move
  std::atomic<std::uint32_t> out_{0};  ///< endpoints unhealthy, draining or ejected
  std::atomic<std::uint32_t> outlier_threshold_{0};  ///< 0: outlier ejection off
  std::atomic<bool> panic_{false};
  std::atomic<std::uint32_t> retries_{0};
  std::atomic<std::uint64_t> panics_{0};
  mutable std::mutex mutex_;
  std::optional<config::OutlierConfig> outlier_;
  std::optional<config::HealthCheckConfig> check_;
};

}  // namespace sluice::health
