// SPDX-License-Identifier: Apache-2.0
#include "gateway/breaker/concurrency_limit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sluice::breaker {
namespace {

/// Config validation reports these with field paths; this guards programmatic callers.
const ConcurrencyParams& validated(const ConcurrencyParams& params) {
  if (params.min == 0 || params.min > params.max) {
    throw std::invalid_argument("concurrency: need 1 <= min <= max");
  }
  if (params.buckets < 2 || params.interval <= std::chrono::milliseconds::zero() ||
      params.probe_samples == 0 || !(params.tolerance >= 0.0)) {
    throw std::invalid_argument("concurrency: bad controller constants");
  }
  return params;
}

/// Steps in a row at `min` after which the minimum round trip is probed again (as Envoy does).
constexpr int kStepsAtMinBeforeProbe = 5;

core::Duration width(const ConcurrencyParams& params) {
  return std::chrono::duration_cast<core::Duration>(params.interval);
}

std::uint64_t micros(core::Duration d) {
  return static_cast<std::uint64_t>(
      std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::microseconds>(d).count()));
}

}  // namespace

std::shared_ptr<ConcurrencyLimit> ConcurrencyLimit::create(const core::Clock& clock,
                                                           const ConcurrencyParams& params) {
  return std::make_shared<ConcurrencyLimit>(clock, params);
}

ConcurrencyLimit::ConcurrencyLimit(const core::Clock& clock, const ConcurrencyParams& params)
    : clock_(clock),
      params_(validated(params)),
      window_(clock, params.buckets, width(params)),
      limit_f_(params.min) {
  std::lock_guard lock(mutex_);
  const core::TimePoint now = clock_.now();
  stepped_ = window_.advanced(now).head_start();
  start_probe_locked(now);  // nothing is known of the backend yet
}

std::optional<ConcurrencySlot> ConcurrencyLimit::try_acquire() {
  const std::uint64_t probe = probe_id_.load(std::memory_order_relaxed);
  const std::int64_t now_in_flight = in_flight_.fetch_add(1, std::memory_order_relaxed) + 1;
  const std::uint32_t limit = limit_.load(std::memory_order_relaxed);
  if (limit != 0 && now_in_flight > static_cast<std::int64_t>(limit)) {
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    rejections_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  return ConcurrencySlot(shared_from_this(), probe);
}

void ConcurrencyLimit::release(std::uint64_t probe, std::optional<core::Duration> latency,
                               core::TimePoint now) {
  if (latency) {
    std::lock_guard lock(mutex_);
    if (params_.enabled) {
      const std::uint64_t us = micros(*latency);
      peak_in_flight_ = std::max(peak_in_flight_, in_flight_.load(std::memory_order_relaxed));
      step_locked(now);
      window_.advanced(now).add({.count = 1, .total_us = us});
      if (probing_ && probe == probe_id_.load(std::memory_order_relaxed)) {
        probe_us_.push_back(us);
        if (probe_us_.size() >= params_.probe_samples ||
            now - probe_started_ >= params_.probe_patience) {
          end_probe_locked(now);
        }
      } else if (!probing_ && now >= next_probe_) {
        start_probe_locked(now);
      }
    }
  }
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
}

void ConcurrencyLimit::step_locked(core::TimePoint now) {
  const auto ring = window_.advanced(now);
  if (ring.head_start() <= stepped_) {
    return;  // still inside the interval the last step began
  }
  stepped_ = ring.head_start();
  // The interval that just ended (empty when time skipped past it).
  const LatencyTally last = ring.from_oldest(ring.size() - 2);
  const std::int64_t peak = std::exchange(peak_in_flight_, 0);
  if (probing_ || min_rtt_us_ <= 0.0 || last.count < params_.step_samples) {
    return;
  }
  const double rtt = static_cast<double>(last.total_us) / static_cast<double>(last.count);
  const double target = min_rtt_us_ * (1.0 + params_.tolerance);
  const double gradient = std::clamp(target / std::max(rtt, 1.0), 0.5, 2.0);
  double next = gradient * limit_f_;
  next += params_.headroom * std::sqrt(next);
  if (next > limit_f_ && static_cast<double>(peak) * 2.0 < limit_f_) {
    return;  // light traffic says nothing about a higher limit
  }
  limit_f_ = std::clamp(next, static_cast<double>(params_.min), static_cast<double>(params_.max));
  // Stuck at the floor: the latency never came near M again, so M may be stale (the backend's
  // own floor moved). Measure it anew rather than wait for the next probe.
  at_min_steps_ = limit_f_ <= static_cast<double>(params_.min) ? at_min_steps_ + 1 : 0;
  if (at_min_steps_ >= kStepsAtMinBeforeProbe) {
    start_probe_locked(now);
    return;
  }
  publish_locked();
}

void ConcurrencyLimit::start_probe_locked(core::TimePoint now) {
  probing_ = true;
  at_min_steps_ = 0;
  probe_started_ = now;
  probe_us_.clear();
  probe_id_.fetch_add(1, std::memory_order_relaxed);  // slots taken from now on measure it
  publish_locked();
}

void ConcurrencyLimit::end_probe_locked(core::TimePoint now) {
  auto middle = probe_us_.begin() + static_cast<std::ptrdiff_t>(probe_us_.size() / 2);
  std::nth_element(probe_us_.begin(), middle, probe_us_.end());
  min_rtt_us_ = static_cast<double>(std::max<std::uint64_t>(*middle, 1));
  probing_ = false;
  probe_us_.clear();
  probe_id_.fetch_add(1, std::memory_order_relaxed);
  next_probe_ = now + params_.probe_every;
  stepped_ = window_.advanced(now).head_start();  // the next step sees traffic at the old limit
  publish_locked();
}

void ConcurrencyLimit::publish_locked() {
  std::uint32_t limit = 0;  // 0: no limit (disabled)
  if (params_.enabled) {
    limit = probing_ ? params_.min : static_cast<std::uint32_t>(std::lround(limit_f_));
  }
  limit_.store(limit, std::memory_order_relaxed);
}

ConcurrencySnapshot ConcurrencyLimit::snapshot() {
  std::lock_guard lock(mutex_);
  const core::TimePoint now = clock_.now();
  step_locked(now);
  const LatencyTally recent = window_.advanced(now).total();
  return {.enabled = params_.enabled,
          .limit = limit_.load(std::memory_order_relaxed),
          .in_flight = in_flight_.load(std::memory_order_relaxed),
          .rejections = rejections_.load(std::memory_order_relaxed),
          .min_rtt_ms = min_rtt_us_ / 1000.0,
          .recent_rtt_ms = recent.count == 0 ? 0.0
                                             : static_cast<double>(recent.total_us) /
                                                   static_cast<double>(recent.count) / 1000.0,
          .probing = probing_};
}

ConcurrencyParams ConcurrencyLimit::params() const {
  std::lock_guard lock(mutex_);
  return params_;
}

void ConcurrencyLimit::retune(const ConcurrencyParams& params) {
  validated(params);
  std::lock_guard lock(mutex_);
  if (params.interval != params_.interval || params.buckets != params_.buckets) {
    window_.reshape(params.buckets, width(params));
    stepped_ = window_.advanced(clock_.now()).head_start();
  }
  const bool was_enabled = params_.enabled;
  params_ = params;
  limit_f_ =
      std::clamp(limit_f_, static_cast<double>(params_.min), static_cast<double>(params_.max));
  if (params_.enabled && !was_enabled) {
    start_probe_locked(clock_.now());  // what was measured before may be stale
  } else {
    publish_locked();
  }
}

}  // namespace sluice::breaker
