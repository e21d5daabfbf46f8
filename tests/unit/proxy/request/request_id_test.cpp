// SPDX-License-Identifier: Apache-2.0
// The request id (docs/behaviour.md "Proxy hygiene"): the client's own when it sent one, else
// 32 fresh lower-case hex digits.
#include <gtest/gtest.h>

#include <array>
#include <bitset>
#include <cstddef>
#include <set>
#include <string>

#include "gateway/proxy/request/request_context.hpp"

namespace sluice::proxy {
namespace {

std::size_t hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return static_cast<std::size_t>(c - '0');
  }
  if (c >= 'a' && c <= 'f') {
    return static_cast<std::size_t>(c - 'a' + 10);
  }
  ADD_FAILURE() << "not a lower-case hex digit: '" << c << "'";
  return 0;
}

TEST(RequestIdTest, AGeneratedIdIs32LowerCaseHexDigitsAndNewEachTime) {
  RequestId id;
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    id.generate();
    ASSERT_EQ(id.view().size(), 32U);
    EXPECT_TRUE(id.generated());
    for (const char c : id.view()) {
      hex_value(c);
    }
    seen.emplace(id.view());
  }
  EXPECT_EQ(seen.size(), 100U);
}

TEST(RequestIdTest, EveryDigitComesUpInEveryPosition) {
  // A digit that never appears somewhere would mean bits dropped between the random source and
  // the text (a wrong nibble, a wrong table entry). 2,000 ids: a digit misses one position with
  // probability (15/16)^2000, far below 1e-50.
  std::array<std::bitset<16>, 32> digits_at{};
  RequestId id;
  for (int i = 0; i < 2000; ++i) {
    id.generate();
    for (std::size_t pos = 0; pos < 32; ++pos) {
      digits_at[pos].set(hex_value(id.view()[pos]));
    }
  }
  for (std::size_t pos = 0; pos < 32; ++pos) {
    EXPECT_TRUE(digits_at[pos].all()) << "position " << pos << ": " << digits_at[pos];
  }
}

TEST(RequestIdTest, TheClientsIdIsKeptAsSentAndNotMarkedGenerated) {
  RequestId id;
  id.generate();
  id.keep("req-7f3a");
  EXPECT_EQ(id.view(), "req-7f3a");
  EXPECT_FALSE(id.generated());
}

}  // namespace
}  // namespace sluice::proxy
