// SPDX-License-Identifier: Apache-2.0
#include "gateway/demo/service_capacity.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

namespace sluice::demo {
namespace {

/// Claims numbered in the order they were made; a grant callback records its claim's number,
/// and deliver() then tells the claim, as the session does on its own thread.
class ServiceCapacityTest : public ::testing::Test {
 protected:
  /// Makes claim number claims_.size(); true if it holds a slot at once.
  bool claim() {
    const int number = static_cast<int>(claims_.size());
    claims_.push_back(std::make_unique<std::optional<SlotClaim>>(
        capacity_.claim([this, number] { granted_.push_back(number); })));
    return claims_.back()->value().holds_slot();
  }
  SlotClaim& at(int number) { return claims_.at(number)->value(); }
  /// Destroys claim `number` (its request is answered, or its client went away).
  void finish(int number) { claims_.at(number)->reset(); }
  /// Passes every grant recorded since the last call on to its claim.
  void deliver() {
    for (; delivered_ < granted_.size(); ++delivered_) {
      at(granted_[delivered_]).granted();
    }
  }

  // Declared before claims_: destroying a claim may hand its slot on and record the grant.
  ServiceCapacity capacity_{2};
  std::vector<int> granted_;
  std::size_t delivered_ = 0;
  std::vector<std::unique_ptr<std::optional<SlotClaim>>> claims_;
};

TEST_F(ServiceCapacityTest, GrantsAtOnceUpToTheCapacityThenQueues) {
  EXPECT_TRUE(claim());
  EXPECT_TRUE(claim());
  EXPECT_FALSE(claim());
  EXPECT_FALSE(claim());
  EXPECT_EQ(capacity_.load().in_service, 2U);
  EXPECT_EQ(capacity_.load().queued, 2U);
  EXPECT_TRUE(granted_.empty());
}

TEST_F(ServiceCapacityTest, HandsFreedSlotsToTheQueueInArrivalOrder) {
  for (int i = 0; i < 6; ++i) {
    claim();
  }
  finish(1);
  EXPECT_EQ(granted_, std::vector<int>{2});
  finish(0);
  EXPECT_EQ(granted_, (std::vector<int>{2, 3}));
  deliver();
  EXPECT_TRUE(at(2).holds_slot());
  EXPECT_FALSE(at(4).holds_slot());
  finish(3);
  finish(2);
  EXPECT_EQ(granted_, (std::vector<int>{2, 3, 4, 5}));
  EXPECT_EQ(capacity_.load().in_service, 2U);
  EXPECT_EQ(capacity_.load().queued, 0U);
  deliver();
  finish(4);
  finish(5);
  EXPECT_EQ(capacity_.load().in_service, 0U);
  EXPECT_EQ(granted_.size(), 4U);  // each grant ran once
}

TEST_F(ServiceCapacityTest, NeverServesMoreThanTheCapacityAtOnce) {
  // Waves of arrivals and completions, oldest answered first; the count never exceeds 2.
  std::size_t most = 0;
  int next_done = 0;
  for (int wave = 0; wave < 10; ++wave) {
    for (int i = 0; i < 3; ++i) {
      claim();
      most = std::max(most, capacity_.load().in_service);
    }
    for (int i = 0; i < 2; ++i) {
      deliver();
      finish(next_done++);
      most = std::max(most, capacity_.load().in_service);
    }
  }
  EXPECT_EQ(most, 2U);
  EXPECT_EQ(capacity_.load().in_service + capacity_.load().queued, 10U);
}

TEST_F(ServiceCapacityTest, TryClaimTakesOnlyAFreeSlotNobodyWaitsFor) {
  auto first = capacity_.try_claim();
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->holds_slot());
  EXPECT_TRUE(claim());
  EXPECT_FALSE(capacity_.try_claim());  // no slot free
  EXPECT_FALSE(claim());
  first.reset();  // the free slot goes to claim 1, the waiter
  EXPECT_EQ(granted_, std::vector<int>{1});
  deliver();
  finish(0);
  EXPECT_EQ(capacity_.load(), (ServiceLoad{1, 0}));
  EXPECT_TRUE(capacity_.try_claim());
  EXPECT_EQ(capacity_.load(), (ServiceLoad{1, 0}));  // the temporary claim gave its slot back
}

TEST_F(ServiceCapacityTest, ANewcomerNeverOvertakesAWaiter) {
  capacity_.set_capacity(1);
  EXPECT_TRUE(claim());
  EXPECT_FALSE(claim());
  finish(0);  // the slot goes to claim 1, whose session has not woken yet
  EXPECT_EQ(granted_, std::vector<int>{1});
  EXPECT_FALSE(claim());
  EXPECT_FALSE(capacity_.try_claim());
  EXPECT_EQ(capacity_.load().queued, 1U);
}

TEST_F(ServiceCapacityTest, ALoweredCapacityLetsTheRequestsInServiceFinish) {
  capacity_.set_capacity(4);
  for (int i = 0; i < 6; ++i) {
    claim();
  }
  capacity_.set_capacity(2);
  EXPECT_EQ(capacity_.capacity(), 2U);
  EXPECT_EQ(capacity_.load().in_service, 4U);  // nobody is interrupted
  finish(0);
  finish(1);
  EXPECT_TRUE(granted_.empty());  // 2 still in service: no slot free under the new capacity
  finish(2);
  EXPECT_EQ(granted_, std::vector<int>{4});
  EXPECT_EQ(capacity_.load().in_service, 2U);
  finish(3);
  EXPECT_EQ(granted_, (std::vector<int>{4, 5}));
}

TEST_F(ServiceCapacityTest, ARaisedCapacityGrantsTheQueueAtOnce) {
  for (int i = 0; i < 5; ++i) {
    claim();
  }
  capacity_.set_capacity(4);
  EXPECT_EQ(granted_, (std::vector<int>{2, 3}));
  EXPECT_EQ(capacity_.load().queued, 1U);
  capacity_.set_capacity(0);  // unlimited
  EXPECT_EQ(granted_, (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(capacity_.load().in_service, 5U);
}

TEST_F(ServiceCapacityTest, ZeroIsUnlimitedButStillCounts) {
  capacity_.set_capacity(0);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(claim()) << i;
  }
  EXPECT_EQ(capacity_.load().in_service, 5U);
  capacity_.set_capacity(2);  // the five in service count against it
  EXPECT_FALSE(claim());
  finish(0);
  finish(1);
  finish(2);
  EXPECT_TRUE(granted_.empty());
  finish(3);
  EXPECT_EQ(granted_, std::vector<int>{5});
}

TEST_F(ServiceCapacityTest, AWithdrawnClaimLosesItsPlaceAndIsNeverGranted) {
  for (int i = 0; i < 5; ++i) {
    claim();
  }
  finish(3);  // queued: its client went away
  EXPECT_EQ(capacity_.load().queued, 2U);
  finish(0);
  finish(1);
  EXPECT_EQ(granted_, (std::vector<int>{2, 4}));
  EXPECT_EQ(capacity_.load().in_service, 2U);
}

TEST_F(ServiceCapacityTest, AGrantRacingTheWithdrawalIsGivenBackAtOnce) {
  for (int i = 0; i < 4; ++i) {
    claim();
  }
  finish(0);  // the slot goes to claim 2 ...
  EXPECT_EQ(granted_, std::vector<int>{2});
  finish(2);  // ... whose client left before the grant reached its session
  EXPECT_EQ(granted_, (std::vector<int>{2, 3}));
  EXPECT_EQ(capacity_.load().in_service, 2U);  // claims 1 and 3
  EXPECT_EQ(capacity_.load().queued, 0U);
}

TEST_F(ServiceCapacityTest, AMovedClaimReleasesOnce) {
  capacity_.set_capacity(1);
  std::optional<SlotClaim> first(capacity_.claim([] {}));
  ASSERT_TRUE(first->holds_slot());
  {
    const SlotClaim moved(std::move(*first));
    EXPECT_TRUE(moved.holds_slot());
    EXPECT_FALSE(first->holds_slot());  // NOLINT(bugprone-use-after-move): that's the point
  }
  EXPECT_EQ(capacity_.load().in_service, 0U);
  first.reset();
  EXPECT_EQ(capacity_.load().in_service, 0U);
  EXPECT_TRUE(claim());
}

TEST_F(ServiceCapacityTest, CloseDropsTheQueueWithoutAGrant) {
  for (int i = 0; i < 4; ++i) {
    claim();
  }
  capacity_.close();
  EXPECT_EQ(capacity_.load().queued, 0U);
  EXPECT_EQ(capacity_.load().in_service, 0U);
  for (int i = 0; i < 4; ++i) {
    finish(i);  // held and queued alike: nothing is released or handed on
  }
  EXPECT_TRUE(granted_.empty());
  EXPECT_TRUE(claim());
  EXPECT_EQ(capacity_.load().in_service, 0U);
}

}  // namespace
}  // namespace sluice::demo
