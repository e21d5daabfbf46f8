// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>

#include "gateway/core/clock.hpp"

namespace sluice::testing {

/// A clock that moves only when the test says so. Starts far from zero so that "elapsed since
/// the default time point" is never 0. Thread-safe (readers may run on other threads).
class ManualClock final : public core::Clock {
 public:
  [[nodiscard]] core::TimePoint now() const noexcept override { return now_.load(); }
  void advance(core::Duration d) noexcept { now_.store(now_.load() + d); }
  void set(core::TimePoint t) noexcept { now_.store(t); }

 private:
  std::atomic<core::TimePoint> now_{core::TimePoint{} + std::chrono::hours(24)};
};

}  // namespace sluice::testing
