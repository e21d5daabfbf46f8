// SPDX-License-Identifier: Apache-2.0
#include "gateway/breaker/adaptive_breaker.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace sluice::breaker {
namespace {

core::Duration bucket_width(const BreakerParams& params) {
  return std::chrono::duration_cast<core::Duration>(params.window) / params.buckets;
}

/// Config validation reports these with field paths; this guards programmatic callers.
const BreakerParams& validated(const BreakerParams& params) {
  if (params.buckets == 0 || params.window <= std::chrono::milliseconds::zero()) {
    throw std::invalid_argument("breaker: window and buckets must be positive");
  }
  if (!(params.k >= 1.0) || !(params.protection >= 0.0)) {  // also rejects NaN
    throw std::invalid_argument("breaker: k must be >= 1 and protection >= 0");
  }
  return params;
}

}  // namespace

std::shared_ptr<AdaptiveBreaker> AdaptiveBreaker::create(const core::Clock& clock,
                                                         core::Random& random,
                                                         const BreakerParams& params) {
  return std::make_shared<AdaptiveBreaker>(clock, random, params);
}

AdaptiveBreaker::AdaptiveBreaker(const core::Clock& clock, core::Random& random,
                                 const BreakerParams& params)
    : clock_(clock),
      random_(random),
      params_(validated(params)),
      window_(clock, params.buckets, bucket_width(params)),
      shadow_(params.shadow) {}

double AdaptiveBreaker::refresh_locked(core::TimePoint now) {
  const auto ring = window_.advanced(now);
  double p = 0.0;
  if (params_.enabled) {
    // SRE book, "Handling Overload", client-side throttling, with go-zero's `protection` term.
    const Tally t = ring.total();
    const auto requests = static_cast<double>(t.requests);
    const double excess =
        requests - params_.protection - params_.k * static_cast<double>(t.accepts);
    p = std::max(0.0, excess / (requests + 1.0));
  }
  // Publish p, then how long it holds: a reader that sees the new deadline sees this p.
  published_p_.store(p, std::memory_order_relaxed);
  published_until_.store(ring.end().time_since_epoch().count(), std::memory_order_release);
  return p;
}

std::optional<Admission> AdaptiveBreaker::try_admit() {
  return try_admit(clock_.now());
}

std::optional<Admission> AdaptiveBreaker::try_admit(core::TimePoint now) {
  double p = 0.0;
  if (now.time_since_epoch().count() < published_until_.load(std::memory_order_acquire)) {
    p = published_p_.load(std::memory_order_relaxed);  // the common case: no lock
  } else {
    std::lock_guard lock(mutex_);
    p = refresh_locked(now);
  }
  // p == 0 (the healthy case) needs no draw at all.
  if (p > 0.0 && random_.next_unit() < p) {
    if (shadow_.load(std::memory_order_relaxed)) {
      shadow_drops_.fetch_add(1, std::memory_order_relaxed);
      return Admission(shared_from_this(), true);
    }
    drops_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  return Admission(shared_from_this());
}

void AdaptiveBreaker::record(Outcome outcome, core::TimePoint now) {
  const Tally one{.requests = 1, .accepts = outcome == Outcome::kSuccess ? 1U : 0U};
  std::lock_guard lock(mutex_);
  window_.advanced(now).add(one);
  refresh_locked(now);
}

BreakerSnapshot AdaptiveBreaker::snapshot() {
  std::lock_guard lock(mutex_);
  const core::TimePoint now = clock_.now();
  const double p = refresh_locked(now);
  const Tally t = window_.advanced(now).total();
  return {.requests = t.requests,
          .accepts = t.accepts,
          .drop_probability = p,
          .drops = drops_.load(std::memory_order_relaxed),
          .shadow_drops = shadow_drops_.load(std::memory_order_relaxed),
          .shadow = params_.shadow};
}

BreakerParams AdaptiveBreaker::params() const {
  std::lock_guard lock(mutex_);
  return params_;
}

void AdaptiveBreaker::retune(const BreakerParams& params) {
  validated(params);
  std::lock_guard lock(mutex_);
  if (params.window != params_.window || params.buckets != params_.buckets) {
    window_.reshape(params.buckets, bucket_width(params));
  }
  params_ = params;
  shadow_.store(params.shadow, std::memory_order_relaxed);
  refresh_locked(clock_.now());
}

}  // namespace sluice::breaker
