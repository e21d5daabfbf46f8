// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/exchange/exchange_retry.hpp"

#include <gtest/gtest.h>

namespace sluice::proxy::detail {
namespace {

using std::chrono::milliseconds;

TEST(ExchangeRetryTest, RetryOnNamesResultsAndStatuses) {
  config::RetryConfig retry;
  retry.on_reset = false;
  retry.on_statuses = {503};
  EXPECT_TRUE(retry_on(retry, UpstreamResult::kConnectError, 0));
  EXPECT_FALSE(retry_on(retry, UpstreamResult::kReset, 0));
  EXPECT_TRUE(retry_on(retry, UpstreamResult::kTimeout, 0));
  EXPECT_TRUE(retry_on(retry, UpstreamResult::kResponse, 503));
  EXPECT_FALSE(retry_on(retry, UpstreamResult::kResponse, 502));
  EXPECT_FALSE(retry_on(retry, UpstreamResult::kNotSent, 0));
}

TEST(ExchangeRetryTest, BackoffDoublesPerRetryWithinHalfAndOneAndAHalfTimes) {
  config::RetryConfig retry;
  retry.backoff = milliseconds(20);
  BalanceCursor random;
  for (unsigned number = 1; number <= 4; ++number) {
    const auto base = milliseconds(20) * (1U << (number - 1));
    core::Duration low = base * 2;
    core::Duration high{};
    for (int i = 0; i < 2000; ++i) {
      const core::Duration d = backoff_for(retry, number, random);
      low = std::min(low, d);
      high = std::max(high, d);
    }
    EXPECT_GE(low, base / 2) << number;
    EXPECT_LT(low, base * 6 / 10) << number << ": the draws reach down near half";
    EXPECT_LT(high, base * 3 / 2) << number;
    EXPECT_GT(high, base * 14 / 10) << number;
  }
  retry.backoff = milliseconds(0);
  EXPECT_EQ(backoff_for(retry, 1, random), core::Duration::zero());
}

}  // namespace
}  // namespace sluice::proxy::detail
