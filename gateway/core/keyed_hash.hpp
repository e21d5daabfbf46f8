// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace sluice::core {

namespace detail {
/// SipHash-c-d (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012) of `data` under
/// the 128-bit key (k0, k1), both read little-endian from the 16 key bytes as the paper defines.
template <int CompressionRounds, int FinalizationRounds>
std::uint64_t siphash(std::uint64_t k0, std::uint64_t k1, std::string_view data) noexcept;
}  // namespace detail

/// A keyed 64-bit hash of short strings (SipHash-1-3, the variant Rust's HashMap uses): fast, and
/// without the key an attacker cannot choose inputs that collide, so user-chosen keys cannot pile
/// into one shard or probe chain. Immutable after construction, hence thread-safe.
class KeyedHash {
 public:
  using Key = std::array<std::uint8_t, 16>;

  explicit KeyedHash(const Key& key) noexcept;
  /// A hash under a fresh key from OpenSSL's CSPRNG (one per process or store).
  [[nodiscard]] static KeyedHash with_random_key();
  /// A hash under a key derived from `secret` (the first 16 bytes of its SHA-256), so processes
  /// given the same secret hash alike.
  [[nodiscard]] static KeyedHash from_secret(std::string_view secret);

  [[nodiscard]] std::uint64_t operator()(std::string_view data) const noexcept {
    return detail::siphash<1, 3>(k0_, k1_, data);
  }

 private:
  std::uint64_t k0_;
  std::uint64_t k1_;
};

}  // namespace sluice::core
