// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/core/rolling_window.hpp"

namespace sluice::breaker {

class ConcurrencySlot;

/// Tuning of one adaptive concurrency limit. `enabled`, `min` and `max` come from the backend's
/// `concurrency` object; the rest are the controller's constants (decision 0027, where each is
/// argued), settable here so tests can shape them.
struct ConcurrencyParams {
  bool enabled = true;
  std::uint32_t min = 4;
  std::uint32_t max = 1000;
  /// One controller step per interval: the latency of the requests that ended in it.
  std::chrono::milliseconds interval{100};
  /// Intervals kept in the rolling window (what the admin API and dashboard report as the
  /// recent latency).
  std::uint32_t buckets = 10;
  /// Latency up to (1 + tolerance) x the minimum counts as "no queue".
  double tolerance = 0.1;
  /// Room for a small queue, as a factor of sqrt(limit).
  double headroom = 0.5;
  /// Every this long, the limit drops to `min` until `probe_samples` requests measured the
  /// minimum round trip again.
  std::chrono::milliseconds probe_every{30000};
  std::uint32_t probe_samples = 25;
  /// A probe that got some samples but not `probe_samples` within this long ends with those.
  std::chrono::milliseconds probe_patience{2000};
  /// A step needs this many samples in its interval (fewer: the limit stays).
  std::uint32_t step_samples = 5;

  friend bool operator==(const ConcurrencyParams&, const ConcurrencyParams&) = default;
};

/// One bucket of the latency window: the requests that ended in it with a usable latency.
struct LatencyTally {
  std::uint64_t count = 0;
  std::uint64_t total_us = 0;

  LatencyTally& operator+=(const LatencyTally& o) {
    count += o.count;
    total_us += o.total_us;
    return *this;
  }
  LatencyTally& operator-=(const LatencyTally& o) {
    count -= o.count;
    total_us -= o.total_us;
    return *this;
  }
  friend bool operator==(const LatencyTally&, const LatencyTally&) = default;
};

/// The limit as it stands.
struct ConcurrencySnapshot {
  bool enabled = false;
  std::uint32_t limit = 0;       ///< what admission checks against now
  std::int64_t in_flight = 0;    ///< requests holding a slot
  std::uint64_t rejections = 0;  ///< since the limit was created
  double min_rtt_ms = 0.0;       ///< the last probe's measure; 0 before the first
  double recent_rtt_ms = 0.0;    ///< mean latency over the window; 0 with no sample
  bool probing = false;          ///< measuring the minimum round trip (limit held at `min`)
};

/// An adaptive limit on the requests in flight to one backend (docs/latency-protection.md
/// "Adaptive concurrency"): a gradient controller as in Envoy's adaptive concurrency filter and
/// Netflix's gradient limiters. Every `interval`, from the mean latency L of the requests that
/// ended in the interval and the minimum round trip M measured by the last probe:
///   gradient = clamp(M x (1 + tolerance) / L, 0.5, 2)
///   limit    = clamp(gradient x limit + headroom x sqrt(gradient x limit), min, max)
/// The square root is room for a small queue, so that the backend never idles for want of a
/// request. The limit does not grow while the traffic used less than half of it (it would only
/// drift to `max` under light load). Every `probe_every`, and after five steps in a row at
/// `min`, the limit falls to `min` until `probe_samples` requests admitted during the probe have
/// measured M again (their median).
///
/// Thread-safe: shared by every worker thread, kept across config versions. Admission is one
/// atomic add against a published limit; ending a request takes a short mutex (the controller
/// steps at most once per interval, on the first request to end after it). Create with
/// create(); the clock must outlive it.
class ConcurrencyLimit : public std::enable_shared_from_this<ConcurrencyLimit> {
 public:
  static std::shared_ptr<ConcurrencyLimit> create(const core::Clock& clock,
                                                  const ConcurrencyParams& params);
  ConcurrencyLimit(const core::Clock& clock, const ConcurrencyParams& params);

  /// A slot for one more request in flight, or nullopt when the limit is reached (counted;
  /// answer 503 `backend_overloaded`). Always a slot while disabled (in flight still counted).
  [[nodiscard]] std::optional<ConcurrencySlot> try_acquire();

  [[nodiscard]] ConcurrencySnapshot snapshot();
  [[nodiscard]] ConcurrencyParams params() const;
  /// Applies new tuning; the limit is clamped into the new [min, max] at once.
  void retune(const ConcurrencyParams& params);

  /// A slot ends: with the request's latency when it has a usable one (a response the breaker
  /// accepts), at `now`. ConcurrencySlot calls these.
  void release(std::uint64_t probe, std::optional<core::Duration> latency, core::TimePoint now);

 private:
  void step_locked(core::TimePoint now);
  void start_probe_locked(core::TimePoint now);
  void end_probe_locked(core::TimePoint now);
  void publish_locked();

  const core::Clock& clock_;
  mutable std::mutex mutex_;
  ConcurrencyParams params_;
  core::RollingWindow<LatencyTally> window_;
  double limit_f_;                   ///< the controller's limit before rounding
  double min_rtt_us_ = 0.0;          ///< 0: not measured yet
  core::TimePoint stepped_{};        ///< start of the bucket the last step looked at
  std::int64_t peak_in_flight_ = 0;  ///< most requests in flight seen since the last step
  int at_min_steps_ = 0;             ///< steps in a row that left the limit at `min`
  bool probing_ = false;
  core::TimePoint probe_started_{};
  core::TimePoint next_probe_{};
  std::vector<std::uint64_t> probe_us_;  ///< latencies of requests admitted during the probe
  std::atomic<std::int64_t> in_flight_{0};
  std::atomic<std::uint32_t> limit_{0};  ///< published: min while probing, else the rounded limit
  std::atomic<std::uint64_t> probe_id_{0};  ///< the current probe's number (odd while probing)
  std::atomic<std::uint64_t> rejections_{0};
};

/// One request's place under a ConcurrencyLimit; gives it back exactly once (without a latency
/// sample unless told one). Move-only; keeps the limit alive across config reloads.
class ConcurrencySlot {
 public:
  ConcurrencySlot(std::shared_ptr<ConcurrencyLimit> limit, std::uint64_t probe)
      : limit_(std::move(limit)), probe_(probe) {}
  ConcurrencySlot(ConcurrencySlot&&) noexcept = default;
  ConcurrencySlot& operator=(ConcurrencySlot&&) = delete;
  ConcurrencySlot(const ConcurrencySlot&) = delete;
  ConcurrencySlot& operator=(const ConcurrencySlot&) = delete;
  ~ConcurrencySlot() {
    if (limit_) {
      limit_->release(probe_, std::nullopt, core::TimePoint{});
    }
  }

  /// The request ended with a response the breaker accepts, whose head took `latency`.
  void measured(core::Duration latency, core::TimePoint now) && {
    std::exchange(limit_, nullptr)->release(probe_, latency, now);
  }

 private:
  std::shared_ptr<ConcurrencyLimit> limit_;
  std::uint64_t probe_;
};

}  // namespace sluice::breaker
