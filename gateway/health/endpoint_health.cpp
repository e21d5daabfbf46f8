// SPDX-License-Identifier: Apache-2.0
#include "gateway/health/endpoint_health.hpp"

#include <algorithm>

namespace sluice::health {
namespace {

constexpr std::uint32_t kMaxEjectionMultiplier = 10;

std::int64_t ticks(core::TimePoint t) noexcept {
  return t.time_since_epoch().count();
}

}  // namespace

std::string_view to_string(EndpointState state) noexcept {
  switch (state) {
    case EndpointState::kHealthy:
      return "healthy";
    case EndpointState::kUnhealthy:
      return "unhealthy";
    case EndpointState::kEjected:
      return "ejected";
    case EndpointState::kDraining:
      return "draining";
  }
  return "healthy";
}

EndpointHealth::EndpointHealth(std::vector<std::string> labels)
    : labels_(std::move(labels)),
      slots_(std::make_unique<Slot[]>(labels_.size())) {}  // NOLINT(modernize-avoid-c-arrays)

EndpointHealth::~EndpointHealth() = default;

void EndpointHealth::configure(const std::optional<config::OutlierConfig>& outlier,
                               const std::optional<config::HealthCheckConfig>& check) {
  std::lock_guard lock(mutex_);
  outlier_ = outlier;
  check_ = check;
  outlier_threshold_.store(outlier ? outlier->consecutive_failures : 0, std::memory_order_relaxed);
  for (std::size_t i = 0; i < labels_.size(); ++i) {
    Slot& slot = slots_[i];
    if (!outlier) {  // ejection switched off: nothing stays ejected
      slot.ejected_until.store(0, std::memory_order_relaxed);
      slot.consecutive_failures.store(0, std::memory_order_relaxed);
      slot.times_ejected = 0;
    }
    if (!check) {  // checks switched off: their verdicts go with them
      slot.unhealthy.store(false, std::memory_order_relaxed);
      slot.check_passes = slot.check_failures = 0;
    }
  }
  recount_locked();
}

void EndpointHealth::inherit(const EndpointHealth& previous) {
  std::scoped_lock lock(mutex_, previous.mutex_);
  for (std::size_t i = 0; i < labels_.size(); ++i) {
    const auto j = previous.find(labels_[i]);
    if (!j) {
      continue;
    }
    const Slot& from = previous.slots_[*j];
    Slot& to = slots_[i];
    to.consecutive_failures.store(from.consecutive_failures.load(std::memory_order_relaxed),
                                  std::memory_order_relaxed);
    to.ejected_until.store(from.ejected_until.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
    to.unhealthy.store(from.unhealthy.load(std::memory_order_relaxed), std::memory_order_relaxed);
    to.draining.store(from.draining.load(std::memory_order_relaxed), std::memory_order_relaxed);
    to.times_ejected = from.times_ejected;
    to.last_ejection_end = from.last_ejection_end;
    to.check_passes = from.check_passes;
    to.check_failures = from.check_failures;
    to.ejections = from.ejections;
  }
  recount_locked();
}

std::optional<std::size_t> EndpointHealth::find(std::string_view label) const noexcept {
  const auto it = std::find(labels_.begin(), labels_.end(), label);
  if (it == labels_.end()) {
    return std::nullopt;
  }
  return static_cast<std::size_t>(it - labels_.begin());
}

bool EndpointHealth::pickable(std::size_t i, core::TimePoint now) const noexcept {
  const Slot& slot = slots_[i];
  return !slot.unhealthy.load(std::memory_order_relaxed) &&
         !slot.draining.load(std::memory_order_relaxed) &&
         slot.ejected_until.load(std::memory_order_relaxed) <= ticks(now);
}

bool EndpointHealth::record(std::size_t i, bool failed, core::TimePoint now) {
  const std::uint32_t threshold = outlier_threshold_.load(std::memory_order_relaxed);
  if (threshold == 0) {
    return false;
  }
  Slot& slot = slots_[i];
  if (!failed) {
    // Read first: a healthy endpoint's line stays shared instead of written per request.
    if (slot.consecutive_failures.load(std::memory_order_relaxed) != 0) {
      slot.consecutive_failures.store(0, std::memory_order_relaxed);
    }
    return false;
  }
  if (slot.consecutive_failures.fetch_add(1, std::memory_order_relaxed) + 1 < threshold) {
    return false;
  }
  std::lock_guard lock(mutex_);
  return eject_locked(slot, now);
}

bool EndpointHealth::eject_locked(Slot& slot, core::TimePoint now) {
  if (!outlier_ || slot.ejected_until.load(std::memory_order_relaxed) > ticks(now) ||
      slot.consecutive_failures.load(std::memory_order_relaxed) < outlier_->consecutive_failures) {
    return false;  // already out, or another thread's success reset the streak meanwhile
  }
  std::size_t ejected = 0;
  for (std::size_t j = 0; j < labels_.size(); ++j) {
    ejected += slots_[j].ejected_until.load(std::memory_order_relaxed) > ticks(now) ? 1 : 0;
  }
  const std::size_t cap = labels_.size() * outlier_->max_ejection_percent / 100;
  if (ejected + 1 > cap) {
    return false;  // the cap holds; the streak stays, so the next failure asks again
  }
  // Repeat offenders stay out longer; each base period spent back in forgives one ejection.
  const core::Duration base = outlier_->base_ejection;
  if (slot.times_ejected > 0 && slot.last_ejection_end != core::TimePoint{}) {
    const auto forgiven = static_cast<std::uint64_t>((now - slot.last_ejection_end) / base);
    slot.times_ejected -=
        static_cast<std::uint32_t>(std::min<std::uint64_t>(forgiven, slot.times_ejected));
  }
  slot.times_ejected = std::min(slot.times_ejected + 1, kMaxEjectionMultiplier);
  const core::TimePoint until = now + base * slot.times_ejected;
  slot.ejected_until.store(ticks(until), std::memory_order_relaxed);
  slot.last_ejection_end = until;
  slot.consecutive_failures.store(0, std::memory_order_relaxed);
  ++slot.ejections;
  recount_locked();
  return true;
}

bool EndpointHealth::start_retry(std::uint32_t min_concurrency, std::uint32_t percent) noexcept {
  std::uint64_t active = 0;
  for (std::size_t i = 0; i < labels_.size(); ++i) {
    active += slots_[i].in_flight.load(std::memory_order_relaxed);
  }
  const auto budget = std::max<std::uint64_t>(min_concurrency, active * percent / 100);
  std::uint32_t current = retries_.load(std::memory_order_relaxed);
  do {
    if (current >= budget) {
      return false;
    }
  } while (!retries_.compare_exchange_weak(current, current + 1, std::memory_order_relaxed));
  return true;
}

CheckChange EndpointHealth::check_result(std::size_t i, bool passed) {
  std::lock_guard lock(mutex_);
  if (!check_ || i >= labels_.size()) {
    return CheckChange::kNone;
  }
  Slot& slot = slots_[i];
  const bool unhealthy = slot.unhealthy.load(std::memory_order_relaxed);
  if (passed) {
    slot.check_failures = 0;
    ++slot.check_passes;
    if (unhealthy && slot.check_passes >= check_->healthy_threshold) {
      slot.unhealthy.store(false, std::memory_order_relaxed);
      recount_locked();
      return CheckChange::kBecameHealthy;
    }
    return CheckChange::kNone;
  }
  slot.check_passes = 0;
  ++slot.check_failures;
  if (!unhealthy && slot.check_failures >= check_->unhealthy_threshold) {
    slot.unhealthy.store(true, std::memory_order_relaxed);
    recount_locked();
    return CheckChange::kBecameUnhealthy;
  }
  return CheckChange::kNone;
}

bool EndpointHealth::set_draining(std::string_view label, bool draining) {
  const auto i = find(label);
  if (!i) {
    return false;
  }
  std::lock_guard lock(mutex_);
  slots_[*i].draining.store(draining, std::memory_order_relaxed);
  recount_locked();
  return true;
}

EndpointState EndpointHealth::state(std::size_t i, core::TimePoint now) const noexcept {
  const Slot& slot = slots_[i];
  if (slot.draining.load(std::memory_order_relaxed)) {
    return EndpointState::kDraining;
  }
  if (slot.unhealthy.load(std::memory_order_relaxed)) {
    return EndpointState::kUnhealthy;
  }
  if (slot.ejected_until.load(std::memory_order_relaxed) > ticks(now)) {
    return EndpointState::kEjected;
  }
  return EndpointState::kHealthy;
}

std::vector<EndpointView> EndpointHealth::view(core::TimePoint now) const {
  std::lock_guard lock(mutex_);
  std::vector<EndpointView> out;
  out.reserve(labels_.size());
  for (std::size_t i = 0; i < labels_.size(); ++i) {
    const Slot& slot = slots_[i];
    EndpointView v;
    v.endpoint = labels_[i];
    v.state = state(i, now);
    v.active_requests = slot.in_flight.load(std::memory_order_relaxed);
    v.consecutive_failures = slot.consecutive_failures.load(std::memory_order_relaxed);
    const std::int64_t until = slot.ejected_until.load(std::memory_order_relaxed);
    if (until > ticks(now)) {
      v.ejected_until = core::TimePoint(core::Duration(until));
    }
    v.ejections = slot.ejections;
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<std::size_t> EndpointHealth::end_ejections(core::TimePoint now) {
  std::lock_guard lock(mutex_);
  std::vector<std::size_t> ended;
  for (std::size_t i = 0; i < labels_.size(); ++i) {
    Slot& slot = slots_[i];
    const std::int64_t until = slot.ejected_until.load(std::memory_order_relaxed);
    if (until != 0 && until <= ticks(now)) {
      slot.ejected_until.store(0, std::memory_order_relaxed);
      ended.push_back(i);
    }
  }
  if (!ended.empty()) {
    recount_locked();
  }
  return ended;
}

void EndpointHealth::recount_locked() noexcept {
  std::uint32_t out = 0;
  for (std::size_t i = 0; i < labels_.size(); ++i) {
    const Slot& slot = slots_[i];
    out += slot.unhealthy.load(std::memory_order_relaxed) ||
                   slot.draining.load(std::memory_order_relaxed) ||
                   slot.ejected_until.load(std::memory_order_relaxed) != 0
               ? 1
               : 0;
  }
  out_.store(out, std::memory_order_relaxed);
}

}  // namespace sluice::health
