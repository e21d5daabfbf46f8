// SPDX-License-Identifier: Apache-2.0
#include "gateway/core/random.hpp"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "tests/support/scripted_random.hpp"

namespace sluice::core {
namespace {

TEST(SystemRandomTest, DrawsLieInTheUnitInterval) {
  SystemRandom random;
  std::set<double> seen;
  for (int i = 0; i < 10000; ++i) {
    const double u = random.next_unit();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    seen.insert(u);
  }
  // 53-bit draws: a repeat among 10^4 has probability ~ 10^8 / 2^54, i.e. never.
  EXPECT_EQ(seen.size(), 10000U);
}

TEST(SystemRandomTest, EachThreadHasItsOwnStream) {
  SystemRandom random;
  double a = 0;
  double b = 0;
  std::thread t1([&] { a = random.next_unit(); });
  std::thread t2([&] { b = random.next_unit(); });
  t1.join();
  t2.join();
  EXPECT_NE(a, b);
}

TEST(ScriptedRandomTest, ReturnsTheScriptThenTheFallback) {
  testing::ScriptedRandom random;
  random.push(0.25);
  random.push(0.75);
  EXPECT_EQ(random.next_unit(), 0.25);
  EXPECT_EQ(random.next_unit(), 0.75);
  EXPECT_EQ(random.next_unit(), 0.5);
  random.set_fallback([] { return 0.125; });
  EXPECT_EQ(random.next_unit(), 0.125);
  EXPECT_EQ(random.taken(), 4U);
}

}  // namespace
}  // namespace sluice::core
