// SPDX-License-Identifier: Apache-2.0
// Key generation shared by the benchmarks: cheap enough not to dominate what is measured.
#pragma once

#include <array>
#include <charconv>
#include <cstdint>
#include <string_view>

#include "gateway/core/keyed_hash.hpp"

namespace sluice::bench {

/// A fixed hash key, so every run lays keys out the same way.
inline core::KeyedHash fixed_hash() {
  core::KeyedHash::Key key{};
  key.fill(42);
  return core::KeyedHash(key);
}

/// Formats "user-<n>" into its own buffer: no allocation inside a timed loop.
struct KeyBuffer {
  std::array<char, 32> data{'u', 's', 'e', 'r', '-'};
  std::string_view format(std::uint64_t n) {
    const auto end = std::to_chars(data.data() + 5, data.data() + data.size(), n).ptr;
    return {data.data(), static_cast<std::size_t>(end - data.data())};
  }
};

/// splitmix64: a cheap, well-spread sequence of key numbers.
inline std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

}  // namespace sluice::bench
