// SPDX-License-Identifier: Apache-2.0
#include "gateway/breaker/breaker_registry.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "tests/support/manual_clock.hpp"
#include "tests/support/scripted_random.hpp"

namespace sluice::breaker {
namespace {

using namespace std::chrono_literals;

class BreakerRegistryTest : public ::testing::Test {
 protected:
  testing::ManualClock clock_;
  testing::ScriptedRandom random_;
  BreakerRegistry registry_{clock_, random_};
};

TEST_F(BreakerRegistryTest, HandsOutOneBreakerPerBackend) {
  const auto users = registry_.sync("users", {});
  const auto orders = registry_.sync("orders", {});
  EXPECT_NE(users, orders);
  EXPECT_EQ(registry_.sync("users", {}), users);
  EXPECT_EQ(registry_.find("users"), users);
  EXPECT_EQ(registry_.find("nobody"), nullptr);
  ASSERT_EQ(registry_.all().size(), 2U);
  EXPECT_EQ(registry_.all()[0].first, "orders");  // by name
}

TEST_F(BreakerRegistryTest, RetunesInPlaceAndKeepsTheWindow) {
  const auto breaker = registry_.sync("users", {});
  breaker->record(Outcome::kFailure);
  breaker->record(Outcome::kSuccess);
  BreakerParams tuned;
  tuned.k = 2.0;
  tuned.window = 20000ms;
  const auto same = registry_.sync("users", tuned);
  EXPECT_EQ(same, breaker);
  EXPECT_EQ(same->params(), tuned);
  const BreakerSnapshot window = same->snapshot();
  EXPECT_EQ(window.requests, 2U);
  EXPECT_EQ(window.accepts, 1U);
}

TEST_F(BreakerRegistryTest, RetainForgetsRemovedBackendsButHoldersKeepTheirs) {
  const auto users = registry_.sync("users", {});
  registry_.sync("orders", {});
  registry_.retain({"orders"});
  EXPECT_EQ(registry_.find("users"), nullptr);
  EXPECT_NE(registry_.find("orders"), nullptr);
  users->record(Outcome::kSuccess);  // still usable by whoever holds it
  EXPECT_EQ(users->snapshot().requests, 1U);
  EXPECT_NE(registry_.sync("users", {}), users);  // a re-added backend starts afresh
}

}  // namespace
}  // namespace sluice::breaker
