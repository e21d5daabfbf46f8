// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "gateway/breaker/breaker_params.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/core/random.hpp"
#include "gateway/core/rolling_window.hpp"

namespace sluice::breaker {

class Admission;

/// One bucket of the breaker window: completed upstream requests and how many were accepted.
struct Tally {
  std::uint64_t requests = 0;
  std::uint64_t accepts = 0;

  Tally& operator+=(const Tally& o) {
    requests += o.requests;
    accepts += o.accepts;
    return *this;
  }
  Tally& operator-=(const Tally& o) {
    requests -= o.requests;
    accepts -= o.accepts;
    return *this;
  }
  friend bool operator==(const Tally&, const Tally&) = default;
};

/// The client-side adaptive throttle of the Google SRE book ("Handling Overload"), as go-zero's
/// googleBreaker does it, for one backend: over a rolling window of completed upstream requests,
/// each new request is dropped with probability
///   p = max(0, (requests - protection - k * accepts) / (requests + 1)).
/// Unlike the book, dropped requests do not enter the window (docs/behaviour.md "Breakers"): only
/// requests really sent upstream do, so the trickle that still passes probes the backend and p
/// falls back to 0 within about one window of the backend healing. Drops are counted beside the
/// window.
///
/// Thread-safe: shared by every worker thread. A short mutex guards the window; admission reads
/// a published drop probability without it, since p only changes when an outcome is recorded,
/// the breaker is retuned, or the head bucket ends. Create with create(); the clock and the
/// random source must outlive the breaker. Calls taking `now` accept a timestamp the caller
/// already holds (the data path reads the clock for its latency metrics anyway); the others read
/// the breaker's clock.
class AdaptiveBreaker : public std::enable_shared_from_this<AdaptiveBreaker> {
 public:
  static std::shared_ptr<AdaptiveBreaker> create(const core::Clock& clock, core::Random& random,
                                                 const BreakerParams& params);

  /// Decides whether a request may go upstream. nullopt: dropped (counted; answer 503
  /// `backend_unavailable`). Otherwise the returned guard records the outcome; in shadow mode
  /// a request the draw would have dropped is admitted with Admission::shadow_dropped() set.
  [[nodiscard]] std::optional<Admission> try_admit();
  [[nodiscard]] std::optional<Admission> try_admit(core::TimePoint now);
  /// Records the outcome of one completed upstream request (Admission calls this).
  void record(Outcome outcome) { record(outcome, clock_.now()); }
  void record(Outcome outcome, core::TimePoint now);

  [[nodiscard]] BreakerSnapshot snapshot();
  /// The drop probability last published (by the last admission, outcome or retune): what
  /// the next admission decides on, without the mutex. A retry is never sent while it is above
  /// 0 (docs/endpoint-health.md "Retries").
  [[nodiscard]] double published_drop_probability() const noexcept {
    return published_p_.load(std::memory_order_relaxed);
  }
  /// Whether the breaker is dropping requests now: p above 0 and not in shadow mode.
  [[nodiscard]] bool shedding() const noexcept {
    return !shadow_.load(std::memory_order_relaxed) && published_drop_probability() > 0.0;
  }
  [[nodiscard]] BreakerParams params() const;
  /// Applies new tuning at once. A new window shape carries the window's counts over into the
  /// new current bucket.
  void retune(const BreakerParams& params);

  AdaptiveBreaker(const core::Clock& clock, core::Random& random, const BreakerParams& params);

 private:
  /// Advances the window to `now`, computes p and publishes it (callers hold mutex_).
  double refresh_locked(core::TimePoint now);

  const core::Clock& clock_;
  core::Random& random_;
  mutable std::mutex mutex_;
  BreakerParams params_;
  core::RollingWindow<Tally> window_;
  std::atomic<double> published_p_{0.0};
  /// published_p_ holds for decisions before this instant (clock ticks): the head bucket's end.
  std::atomic<std::int64_t> published_until_{0};
  std::atomic<std::uint64_t> drops_{0};
  std::atomic<std::uint64_t> shadow_drops_{0};
  std::atomic<bool> shadow_{false};
};

/// Proof that a request was admitted; records its outcome exactly once. Records a FAILURE unless
/// told otherwise, so an early return or a cancelled coroutine cannot leak an unrecorded request
/// (Envoy's admission-control idiom). Move-only; keeps the breaker alive across config reloads.
class Admission {
 public:
  explicit Admission(std::shared_ptr<AdaptiveBreaker> breaker, bool shadow_dropped = false)
      : breaker_(std::move(breaker)), shadow_dropped_(shadow_dropped) {}
  Admission(Admission&&) noexcept = default;
  Admission& operator=(Admission&&) = delete;
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;
  ~Admission() {
    if (breaker_) {
      breaker_->record(Outcome::kFailure);
    }
  }

  /// A shadow breaker's draw would have dropped this request (it goes upstream all the same).
  [[nodiscard]] bool shadow_dropped() const noexcept { return shadow_dropped_; }

  /// The upstream answered with an accepted status (at `now`, when the caller has the time).
  void succeeded() && { std::exchange(breaker_, nullptr)->record(Outcome::kSuccess); }
  void succeeded(core::TimePoint now) && {
    std::exchange(breaker_, nullptr)->record(Outcome::kSuccess, now);
  }
  /// The upstream failed (failure status, connect error, reset, timeout).
  void failed() && { std::exchange(breaker_, nullptr)->record(Outcome::kFailure); }
  void failed(core::TimePoint now) && {
    std::exchange(breaker_, nullptr)->record(Outcome::kFailure, now);
  }
  /// The request never reached the upstream (e.g. the client went away first): the window
  /// holds only requests actually sent, so record nothing.
  void abandon() && { breaker_.reset(); }

 private:
  std::shared_ptr<AdaptiveBreaker> breaker_;
  bool shadow_dropped_;
};

}  // namespace sluice::breaker
