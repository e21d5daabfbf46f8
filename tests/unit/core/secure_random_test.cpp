// SPDX-License-Identifier: Apache-2.0
#include "gateway/core/secure_random.hpp"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>

namespace sluice::core {
namespace {

TEST(SecureRandomTest, HexHasTwoLowercaseDigitsPerByte) {
  const std::string hex = secure_random_hex(16);
  ASSERT_EQ(hex.size(), 32U);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos) << hex;
  EXPECT_TRUE(secure_random_hex(0).empty());
}

TEST(SecureRandomTest, DrawsDoNotRepeat) {
  // 128-bit draws: a repeat among 100 would mean the generator is broken, not unlucky.
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    seen.insert(secure_random_hex(16));
  }
  EXPECT_EQ(seen.size(), 100U);
}

TEST(SecureRandomTest, FillsTheWholeBuffer) {
  // Each of 64 bytes stays 0 with probability 1/256: all 64 staying 0 never happens; the last
  // byte staying 0 in 8 draws in a row (2^-64) neither.
  bool last_set = false;
  for (int i = 0; i < 8 && !last_set; ++i) {
    std::array<std::uint8_t, 64> bytes{};
    secure_random_bytes(bytes);
    last_set = bytes.back() != 0;
  }
  EXPECT_TRUE(last_set);
}

}  // namespace
}  // namespace sluice::core
