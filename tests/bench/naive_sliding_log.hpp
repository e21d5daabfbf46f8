// SPDX-License-Identifier: Apache-2.0
// The baselines the benchmarks compare against: what one writes first. A sliding log per key
// (every admitted request's timestamp) in one map under one mutex, and a breaker that keeps
// every outcome in a deque. Exact, simple, and the thing sluice has to beat.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "gateway/core/clock.hpp"

namespace sluice::bench {

class NaiveSlidingLog {
 public:
  NaiveSlidingLog(const core::Clock& clock, std::uint32_t limit, core::Duration window)
      : clock_(clock), limit_(limit), window_(window) {}

  bool decide(std::string_view key) {
    std::lock_guard lock(mutex_);
    const core::TimePoint now = clock_.now();
    auto& log = logs_[std::string(key)];
    while (!log.empty() && log.front() <= now - window_) {
      log.pop_front();
    }
    if (log.size() >= limit_) {
      return false;
    }
    log.push_back(now);
    return true;
  }

 private:
  const core::Clock& clock_;
  const std::uint32_t limit_;
  const core::Duration window_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::deque<core::TimePoint>> logs_;
};

class NaiveBreaker {
 public:
  NaiveBreaker(const core::Clock& clock, core::Duration window) : clock_(clock), window_(window) {}

  /// The same formula as AdaptiveBreaker (k 1.5, protection 5) over a log of outcomes.
  bool admit(double draw) {
    std::lock_guard lock(mutex_);
    expire(clock_.now());
    const auto requests = static_cast<double>(log_.size());
    const double p =
        std::max(0.0, (requests - 5.0 - 1.5 * static_cast<double>(accepts_)) / (requests + 1.0));
    return draw >= p;
  }
  void record(bool accepted) {
    std::lock_guard lock(mutex_);
    const core::TimePoint now = clock_.now();
    expire(now);
    log_.emplace_back(now, accepted);
    accepts_ += accepted ? 1 : 0;
  }

 private:
  void expire(core::TimePoint now) {
    while (!log_.empty() && log_.front().first <= now - window_) {
      accepts_ -= log_.front().second ? 1 : 0;
      log_.pop_front();
    }
  }
  const core::Clock& clock_;
  const core::Duration window_;
  std::mutex mutex_;
  std::deque<std::pair<core::TimePoint, bool>> log_;
  std::uint64_t accepts_ = 0;
};

}  // namespace sluice::bench
