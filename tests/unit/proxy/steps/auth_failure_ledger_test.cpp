// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/steps/auth_failure_ledger.hpp"

#include <gtest/gtest.h>

#include "tests/support/manual_clock.hpp"

namespace sluice::proxy {
namespace {

using namespace std::chrono_literals;

config::AuthFailurePolicyConfig three_a_minute() {
  return {.failures = 3, .window = 60000ms, .buckets = 6};
}

TEST(AuthFailureLedgerTest, AnAddressTripsAfterItsFailuresAndRecoversAsTheWindowSlides) {
  testing::ManualClock clock;
  AuthFailureLedger ledger(clock);
  ledger.configure(three_a_minute());
  core::Duration retry_after{};
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(ledger.tripped("198.51.100.9", retry_after)) << i;
    ledger.count_failure("198.51.100.9");
  }
  EXPECT_TRUE(ledger.tripped("198.51.100.9", retry_after));
  EXPECT_GT(retry_after, 0s);
  EXPECT_LE(retry_after, 60s);
  EXPECT_FALSE(ledger.tripped("198.51.100.10", retry_after));  // another address
  clock.advance(61s);
  EXPECT_FALSE(ledger.tripped("198.51.100.9", retry_after));
}

TEST(AuthFailureLedgerTest, OffCountsNothingAndTripsNobody) {
  testing::ManualClock clock;
  AuthFailureLedger ledger(clock);
  ledger.configure(std::nullopt);
  core::Duration retry_after{};
  for (int i = 0; i < 100; ++i) {
    ledger.count_failure("198.51.100.9");
  }
  EXPECT_FALSE(ledger.tripped("198.51.100.9", retry_after));
  // Turned on later: the failures while off were never counted.
  ledger.configure(three_a_minute());
  EXPECT_FALSE(ledger.tripped("198.51.100.9", retry_after));
}

}  // namespace
}  // namespace sluice::proxy
