// SPDX-License-Identifier: Apache-2.0
// Merging the heavy hitters replicas publish (gateway/insight/fleet_top.hpp).
#include "gateway/insight/fleet_top.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::insight {
namespace {

using nlohmann::json;

json publication(std::uint64_t error_bound, bool truncated, json users) {
  return {{"window_ms", 60000},
          {"error_bound", error_bound},
          {"tracked", users.size() + (truncated ? 10 : 0)},
          {"truncated", truncated},
          {"users", std::move(users)}};
}

TEST(FleetTopTest, PublishedPolicyListsLabelCountAndLimited) {
  TopAnswer answer;
  answer.users = {{0xabc, 7, 2}, {0xdef, 3, 0}};
  answer.error_bound = 1;
  answer.tracked = 5;
  const json published = published_policy(answer, std::chrono::milliseconds(1000),
                                          [](std::uint64_t user) { return std::to_string(user); });
  EXPECT_EQ(published["users"], json::parse(R"([["2748", 7, 2], ["3567", 3, 0]])"));
  EXPECT_EQ(published["truncated"], true);
  EXPECT_EQ(published["error_bound"], 1);
  EXPECT_EQ(published["window_ms"], 1000);
}

TEST(FleetTopTest, CountsAreSummedAndAnAbsentUserCountsAtThePublishersBound) {
  const json a = publication(0, false, json::parse(R"([["alice", 5, 1], ["bob", 2, 0]])"));
  const json b = publication(3, false, json::parse(R"([["alice", 4, 2], ["carol", 9, 0]])"));
  const FleetTopAnswer merged = merge_published({a, b}, 10);
  ASSERT_EQ(merged.users.size(), 3U);
  EXPECT_EQ(merged.users[0].user, "alice");  // 5 + 4; a tie is ordered by label
  EXPECT_EQ(merged.users[0].count, 9U);
  EXPECT_EQ(merged.users[0].limited, 3U);
  EXPECT_EQ(merged.users[1].user, "carol");  // 9 + 0 (a is exact: carol had none there)
  EXPECT_EQ(merged.users[1].count, 9U);
  EXPECT_EQ(merged.users[2].user, "bob");
  EXPECT_EQ(merged.users[2].count, 5U);  // 2 + b's bound: an upper bound stays an upper bound
  EXPECT_EQ(merged.error_bound, 3U);
  EXPECT_EQ(merged.tracked, 4U);
  EXPECT_EQ(merged.merged, 2U);
  EXPECT_EQ(merge_published({a, b}, 1).users.size(), 1U);
}

TEST(FleetTopTest, PastATruncatedListAnAbsentUserMayHaveTheSmallestCountListed) {
  const json a = publication(1, true, json::parse(R"([["alice", 50, 0], ["bob", 20, 0]])"));
  const json b = publication(0, false, json::parse(R"([["carol", 30, 0]])"));
  const FleetTopAnswer merged = merge_published({a, b}, 10);
  ASSERT_EQ(merged.users.size(), 3U);
  EXPECT_EQ(merged.users[0].user, "alice");
  EXPECT_EQ(merged.users[0].count, 50U);
  EXPECT_EQ(merged.users[1].user, "carol");
  EXPECT_EQ(merged.users[1].count, 50U);  // 30 + at most 20 unlisted in a
}

TEST(FleetTopTest, MalformedPublicationsAreSkipped) {
  const json good = publication(0, false, json::parse(R"([["alice", 5, 1]])"));
  const std::vector<json> published = {
      good, json::array(), json{{"users", "x"}},
      publication(0, false, json::parse(R"([["bob", -1, 0]])")),
      publication(0, false, json::parse(R"([["bob", 1, 0], ["bob", 2, 0]])"))};
  const FleetTopAnswer merged = merge_published(published, 10);
  EXPECT_EQ(merged.merged, 1U);
  ASSERT_EQ(merged.users.size(), 1U);
  EXPECT_EQ(merged.users[0].count, 5U);
  EXPECT_TRUE(merge_published({}, 10).users.empty());
}

}  // namespace
}  // namespace sluice::insight
