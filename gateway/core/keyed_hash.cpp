// SPDX-License-Identifier: Apache-2.0
#include "gateway/core/keyed_hash.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "gateway/core/secure_random.hpp"

namespace sluice::core {
namespace detail {
namespace {

std::uint64_t load_le64(const char* p) noexcept {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) {
    v = __builtin_bswap64(v);
  }
  return v;
}

struct SipState {
  std::uint64_t v0;
  std::uint64_t v1;
  std::uint64_t v2;
  std::uint64_t v3;

  void round() noexcept {
    v0 += v1;
    v1 = std::rotl(v1, 13);
    v1 ^= v0;
    v0 = std::rotl(v0, 32);
    v2 += v3;
    v3 = std::rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = std::rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = std::rotl(v1, 17);
    v1 ^= v2;
    v2 = std::rotl(v2, 32);
  }

  template <int Rounds>
  void absorb(std::uint64_t m) noexcept {
    v3 ^= m;
    for (int i = 0; i < Rounds; ++i) {
      round();
    }
    v0 ^= m;
  }
};

}  // namespace

template <int CompressionRounds, int FinalizationRounds>
std::uint64_t siphash(std::uint64_t k0, std::uint64_t k1, std::string_view data) noexcept {
  SipState s{k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL, k0 ^ 0x6c7967656e657261ULL,
             k1 ^ 0x7465646279746573ULL};
  const char* p = data.data();
  const std::size_t whole = data.size() / 8 * 8;
  for (std::size_t i = 0; i < whole; i += 8) {
    s.absorb<CompressionRounds>(load_le64(p + i));
  }
  // Last block: the remaining 0..7 bytes, little-endian, with the length's low byte on top.
  std::uint64_t last = static_cast<std::uint64_t>(data.size() & 0xffU) << 56U;
  for (std::size_t i = whole; i < data.size(); ++i) {
    last |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8U * (i - whole));
  }
  s.absorb<CompressionRounds>(last);
  s.v2 ^= 0xffU;
  for (int i = 0; i < FinalizationRounds; ++i) {
    s.round();
  }
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

template std::uint64_t siphash<1, 3>(std::uint64_t, std::uint64_t, std::string_view) noexcept;
template std::uint64_t siphash<2, 4>(std::uint64_t, std::uint64_t, std::string_view) noexcept;

}  // namespace detail

KeyedHash::KeyedHash(const Key& key) noexcept
    : k0_(detail::load_le64(reinterpret_cast<const char*>(key.data()))),
      k1_(detail::load_le64(reinterpret_cast<const char*>(key.data() + 8))) {}

KeyedHash KeyedHash::with_random_key() {
  Key key{};
  secure_random_bytes(key);
  return KeyedHash(key);
}

KeyedHash KeyedHash::from_secret(std::string_view secret) {
  std::array<unsigned char, 32> digest{};
  unsigned int length = 0;
  EVP_Digest(secret.data(), secret.size(), digest.data(), &length, EVP_sha256(), nullptr);
  Key key{};
  std::copy_n(digest.begin(), key.size(), key.begin());
  return KeyedHash(key);
}

}  // namespace sluice::core
