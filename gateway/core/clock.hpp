// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>

namespace sluice::core {

using Duration = std::chrono::steady_clock::duration;
using TimePoint = std::chrono::steady_clock::time_point;

/// Monotonic time source. Implementations are thread-safe. Components store a `const Clock&`
/// whose owner (Gateway or a test fixture) outlives them.
class Clock {
 public:
  virtual ~Clock() = default;
  [[nodiscard]] virtual TimePoint now() const noexcept = 0;
};

/// The production clock: std::chrono::steady_clock. Thread-safe, stateless.
class SteadyClock final : public Clock {
 public:
  [[nodiscard]] TimePoint now() const noexcept override { return std::chrono::steady_clock::now(); }
};

}  // namespace sluice::core
