// SPDX-License-Identifier: Apache-2.0
#include "gateway/core/secure_random.hpp"

#include <openssl/rand.h>

#include <limits>
#include <stdexcept>
#include <vector>

namespace sluice::core {

void secure_random_bytes(std::span<std::uint8_t> out) {
  while (!out.empty()) {
    const std::size_t n = std::min<std::size_t>(out.size(), std::numeric_limits<int>::max());
    if (RAND_bytes(out.data(), static_cast<int>(n)) != 1) {
      throw std::runtime_error("RAND_bytes failed: OpenSSL has no entropy for a secret");
    }
    out = out.subspan(n);
  }
}

std::string secure_random_hex(std::size_t bytes) {
  constexpr char kHex[] = "0123456789abcdef";
  std::vector<std::uint8_t> raw(bytes);
  secure_random_bytes(raw);
  std::string out;
  out.reserve(bytes * 2);
  for (const std::uint8_t byte : raw) {
    out.push_back(kHex[byte >> 4U]);
    out.push_back(kHex[byte & 0xFU]);
  }
  return out;
}

}  // namespace sluice::core
