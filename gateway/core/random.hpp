// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace sluice::core {

/// Source of uniform draws for probabilistic decisions (breaker drops). Implementations are
/// thread-safe. Tests substitute a scripted fake.
class Random {
 public:
  virtual ~Random() = default;
  /// A uniform draw in [0, 1).
  [[nodiscard]] virtual double next_unit() noexcept = 0;
};

/// xoshiro256** with one generator per thread, each seeded from std::random_device on first use.
/// Thread-safe without locks; not for cryptographic use.
class SystemRandom final : public Random {
 public:
  [[nodiscard]] double next_unit() noexcept override;
};

}  // namespace sluice::core
