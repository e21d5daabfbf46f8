// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>

#include "gateway/core/clock.hpp"

namespace sluice::replay {

/// The simulated clock of a replay: the limiter reads the logged time of the request it decides
/// (docs/decisions/0015-what-if-replay.md). Moves only when set. Thread-safe (the limiter may
/// read it from any thread; a replay sets it from one).
class ReplayClock final : public core::Clock {
 public:
  [[nodiscard]] core::TimePoint now() const noexcept override {
    return now_.load(std::memory_order_relaxed);
  }
  void set(core::TimePoint t) noexcept { now_.store(t, std::memory_order_relaxed); }

 private:
  std::atomic<core::TimePoint> now_{};
};

}  // namespace sluice::replay
