// SPDX-License-Identifier: Apache-2.0
// The fleet's compare-and-set write and its write turn against a real Redis (docs/fleet.md,
// "Writes"): a writer that lost twice takes the turn, and until it writes no other replica's
// write is taken, even one at the right version.
#include "gateway/fleet/fleet_store.hpp"

#include <gtest/gtest.h>

#include <string>

#include "gateway/fleet/fleet_redis.hpp"
#include "tests/support/redis_server.hpp"

namespace sluice::fleet {
namespace {

using Result = WriteOutcome::Result;

class FleetStoreTest : public ::testing::Test {
 protected:
  FleetRedis::Options options() const {
    FleetRedis::Options o;
    o.port = redis.port();
    return o;
  }
  static FleetVersion by(const std::string& replica, const std::string& config) {
    return FleetVersion{0, config, replica, 1};
  }

  testing::RedisServer redis;
  FleetRedis a_redis{options()};
  FleetRedis b_redis{options()};
  FleetStore a{a_redis, "t"};
  FleetStore b{b_redis, "t"};
};

TEST_F(FleetStoreTest, AWriterThatTookTheTurnIsTheNextOneTaken) {
  ASSERT_TRUE(a.take_or_seed(FleetVersion{1, "{}", "a", 1}, "seed"));
  // A loses (it was behind) and asks for the turn: refused, but the turn is its own now.
  const auto lost = a.write(0, by("a", R"({"x":1})"), "admin", "x", true);
  EXPECT_EQ(lost.result, Result::kMismatch);
  EXPECT_EQ(lost.version, 1U);
  EXPECT_TRUE(lost.turn_ours);
  EXPECT_FALSE(lost.turn_held);
  EXPECT_EQ(redis.command({"GET", "sluice-fleet:{t}:turn"}), "a");
  const auto ttl = std::stoll(redis.command({"PTTL", "sluice-fleet:{t}:turn"}));
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, FleetStore::kTurnMs);  // a holder that died frees it on its own
  // B writes at the right version: refused while A holds the turn, and it cannot take it.
  const auto waited = b.write(1, by("b", R"({"y":1})"), "admin", "y", true);
  EXPECT_EQ(waited.result, Result::kMismatch);
  EXPECT_TRUE(waited.turn_held);
  EXPECT_EQ(b.current()->version, 1U);
  EXPECT_EQ(redis.command({"GET", "sluice-fleet:{t}:turn"}), "a");
  // A's write is taken and gives the turn back; then B's (carried onto version 2) is.
  const auto written = a.write(1, by("a", R"({"x":1})"), "admin", "x");
  EXPECT_EQ(written.result, Result::kApplied);
  EXPECT_EQ(written.version, 2U);
  EXPECT_EQ(redis.command({"EXISTS", "sluice-fleet:{t}:turn"}), "0");
  const auto after = b.write(2, by("b", R"({"x":1,"y":1})"), "admin", "y");
  EXPECT_EQ(after.result, Result::kApplied);
  EXPECT_EQ(after.version, 3U);
  EXPECT_EQ(b.current()->config, R"({"x":1,"y":1})");
}

TEST_F(FleetStoreTest, ALoserThatDoesNotAskLeavesTheTurnFreeAndAHolderCanGiveItBack) {
  ASSERT_TRUE(a.take_or_seed(FleetVersion{1, "{}", "a", 1}, "seed"));
  const auto lost = a.write(0, by("a", "{}"), "admin", "x");
  EXPECT_EQ(lost.result, Result::kMismatch);
  EXPECT_FALSE(lost.turn_ours);
  EXPECT_EQ(redis.command({"EXISTS", "sluice-fleet:{t}:turn"}), "0");
  ASSERT_TRUE(a.write(0, by("a", "{}"), "admin", "x", true).turn_ours);
  EXPECT_FALSE(b.release_turn("b"));  // not B's to give back
  EXPECT_EQ(redis.command({"GET", "sluice-fleet:{t}:turn"}), "a");
  EXPECT_TRUE(a.release_turn("a"));  // A's change no longer fits: it gives the turn back
  EXPECT_EQ(b.write(1, by("b", R"({"y":1})"), "admin", "y").result, Result::kApplied);
}

}  // namespace
}  // namespace sluice::fleet
