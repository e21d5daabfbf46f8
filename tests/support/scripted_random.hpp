// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <utility>

#include "gateway/core/random.hpp"

namespace sluice::testing {

/// Returns the draws a test scripted, in order; once they run out, asks the fallback (by
/// default a constant 0.5, or e.g. a seeded generator for long simulations). Thread-safe.
class ScriptedRandom final : public core::Random {
 public:
  void push(double draw) {
    std::lock_guard lock(mutex_);
    draws_.push_back(draw);
  }
  void set_fallback(std::function<double()> fallback) {
    std::lock_guard lock(mutex_);
    fallback_ = std::move(fallback);
  }
  [[nodiscard]] double next_unit() noexcept override {
    std::lock_guard lock(mutex_);
    ++taken_;
    if (draws_.empty()) {
      return fallback_();
    }
    const double draw = draws_.front();
    draws_.pop_front();
    return draw;
  }
  /// How many draws were taken so far (scripted or fallback).
  [[nodiscard]] std::size_t taken() const {
    std::lock_guard lock(mutex_);
    return taken_;
  }

 private:
  mutable std::mutex mutex_;
  std::deque<double> draws_;
  std::function<double()> fallback_ = [] { return 0.5; };
  std::size_t taken_ = 0;
};

}  // namespace sluice::testing
