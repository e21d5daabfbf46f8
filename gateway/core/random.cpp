// SPDX-License-Identifier: Apache-2.0
#include "gateway/core/random.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <random>

namespace sluice::core {
namespace {

// xoshiro256** 1.0 (Blackman and Vigna, https://prng.di.unimi.it/): small state, fast, and good
// enough for drawing drop decisions; std::mt19937_64 would cost 2.5 KB per thread for nothing.
class Xoshiro256 {
 public:
  Xoshiro256() {
    std::random_device device;
    for (auto& word : state_) {
      word = (std::uint64_t{device()} << 32U) | device();
    }
    if (state_[0] == 0 && state_[1] == 0 && state_[2] == 0 && state_[3] == 0) {
      state_[0] = 1;  // the all-zero state is the one fixed point
    }
  }

  std::uint64_t next() noexcept {
    const std::uint64_t result = std::rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17U;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = std::rotl(state_[3], 45);
    return result;
  }

 private:
  std::array<std::uint64_t, 4> state_{};
};

}  // namespace

double SystemRandom::next_unit() noexcept {
  thread_local Xoshiro256 generator;
  // The top 53 bits fill a double's mantissa exactly: uniform on [0, 1) in steps of 2^-53.
  constexpr double kScale = 0x1.0p-53;
  return static_cast<double>(generator.next() >> 11U) * kScale;
}

}  // namespace sluice::core
