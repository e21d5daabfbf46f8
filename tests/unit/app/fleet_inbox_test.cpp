// SPDX-License-Identifier: Apache-2.0
// What the fleet thread hands the control thread (gateway/app/fleet_inbox.hpp).
#include "gateway/app/fleet_inbox.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::app {
namespace {

fleet::FleetVersion version(std::uint64_t number) {
  return {number, "{}", "pod-a", 0};
}

std::vector<fleet::FleetEvent> events(int n) {
  std::vector<fleet::FleetEvent> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({"pod-a", "admin_change", std::to_string(i)});
  }
  return out;
}

TEST(FleetInboxTest, OnlyAPutIntoAnEmptyInboxAsksForAWake) {
  FleetInbox inbox;
  EXPECT_TRUE(inbox.put_version(version(2), false));
  EXPECT_FALSE(inbox.put_events(events(1)));  // a wake is pending: it takes this too
  EXPECT_FALSE(inbox.put_drained({{"b", "e"}}));
  EXPECT_FALSE(inbox.put_version(version(3), true));
  const auto taken = inbox.take();
  ASSERT_TRUE(taken.version);
  EXPECT_EQ(taken.version->version.version, 3U);  // the newest only
  EXPECT_TRUE(taken.version->authoritative);
  EXPECT_EQ(taken.events.size(), 1U);
  EXPECT_EQ(taken.drained, (fleet::DrainedEndpoints{{"b", "e"}}));
  EXPECT_TRUE(inbox.take().empty());
}

// The bug this class fixed: taking the version and the events in two steps let a version put
// between them see "something waits" (the events) and not wake, and nothing woke again.
TEST(FleetInboxTest, APutAfterATakeAlwaysWakesWhateverWasWaiting) {
  FleetInbox inbox;
  EXPECT_TRUE(inbox.put_events(events(2)));
  EXPECT_FALSE(inbox.put_version(version(4), false));
  EXPECT_FALSE(inbox.take().empty());
  EXPECT_TRUE(inbox.put_version(version(5), false));
  EXPECT_TRUE(inbox.take().version);
  EXPECT_TRUE(inbox.put_drained({}));
}

TEST(FleetInboxTest, KeepsTheNewestEventsWhenTheControlThreadFallsBehind) {
  FleetInbox inbox;
  EXPECT_TRUE(inbox.put_events(events(1000)));
  EXPECT_FALSE(inbox.put_events(events(100)));
  const auto taken = inbox.take();
  ASSERT_EQ(taken.events.size(), FleetInbox::kMaxEvents);
  EXPECT_EQ(taken.events.back().body, "99");
  EXPECT_EQ(taken.events.front().body, "76");  // 1,100 put, the oldest 76 dropped
}

}  // namespace
}  // namespace sluice::app
