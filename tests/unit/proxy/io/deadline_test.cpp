// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/io/deadline.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

#include "tests/support/manual_clock.hpp"

namespace sluice::proxy {
namespace {

using namespace std::chrono_literals;

class DeadlineTest : public ::testing::Test {
 protected:
  static void count_fire(void* target) noexcept { ++*static_cast<int*>(target); }

  testing::ManualClock clock_;
  boost::asio::io_context ioc_{1};
  DeadlineSweep sweep_{ioc_.get_executor(), clock_};
  int fired_ = 0;
};

TEST_F(DeadlineTest, FiresOnceItsTimeHasComeAndNotBefore) {
  Deadline d(sweep_, &count_fire, &fired_);
  d.arm(clock_.now() + 100ms);
  EXPECT_EQ(sweep_.sweep(clock_.now() + 100ms - 1ns), 0U);
  EXPECT_FALSE(d.expired());
  EXPECT_EQ(sweep_.sweep(clock_.now() + 100ms), 1U);
  EXPECT_TRUE(d.expired());
  EXPECT_FALSE(d.armed());
  EXPECT_EQ(fired_, 1);
  EXPECT_EQ(sweep_.sweep(clock_.now() + 1h), 0U);  // fired once: disarmed by firing
  EXPECT_EQ(fired_, 1);
}

TEST_F(DeadlineTest, ADisarmedDeadlineNeverFires) {
  Deadline d(sweep_, &count_fire, &fired_);
  d.arm(clock_.now() + 10ms);
  d.disarm();
  EXPECT_EQ(sweep_.sweep(clock_.now() + 1h), 0U);
  EXPECT_FALSE(d.expired());
  EXPECT_EQ(fired_, 0);
}

TEST_F(DeadlineTest, ArmingAgainMovesTheTimeAndClearsExpired) {
  Deadline d(sweep_, &count_fire, &fired_);
  d.arm(clock_.now() + 10ms);
  sweep_.sweep(clock_.now() + 10ms);
  ASSERT_TRUE(d.expired());
  d.arm(clock_.now() + 50ms);
  EXPECT_FALSE(d.expired());
  EXPECT_EQ(sweep_.sweep(clock_.now() + 20ms), 0U);
  EXPECT_EQ(sweep_.sweep(clock_.now() + 50ms), 1U);
  EXPECT_EQ(fired_, 2);
}

TEST_F(DeadlineTest, EachDeadlineFiresOnItsOwnTarget) {
  int a = 0;
  int b = 0;
  Deadline da(sweep_, &count_fire, &a);
  Deadline db(sweep_, &count_fire, &b);
  da.arm(clock_.now() + 10ms);
  db.arm(clock_.now() + 30ms);
  sweep_.sweep(clock_.now() + 20ms);
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 0);
}

TEST_F(DeadlineTest, ADeadlineLeavesTheSweepWhenDestroyed) {
  EXPECT_EQ(sweep_.size(), 0U);
  {
    Deadline d(sweep_, &count_fire, &fired_);
    std::optional<Deadline> e;
    e.emplace(sweep_, &count_fire, &fired_);
    EXPECT_EQ(sweep_.size(), 2U);
    e.reset();
    EXPECT_EQ(sweep_.size(), 1U);
  }
  EXPECT_EQ(sweep_.size(), 0U);
}

TEST_F(DeadlineTest, TheTimerSweepsOnItsOwn) {
  struct Target {
    DeadlineSweep* sweep;
    int fired = 0;
    static void fire(void* self) noexcept {
      auto* t = static_cast<Target*>(self);
      ++t->fired;
      t->sweep->stop();  // no more ticks: the io_context runs out of work
    }
  } target{&sweep_};
  Deadline d(sweep_, &Target::fire, &target);
  d.arm(clock_.now() - 1ms);  // already due: the first tick fires it
  sweep_.start(5ms);
  ioc_.run_for(std::chrono::seconds(5));  // a bound, not a wait: returns once the sweep stops
  EXPECT_EQ(target.fired, 1);
}

TEST(DeadlineSweepTest, TicksAtAnEighthOfTheSmallestTimeoutWithinBounds) {
  EXPECT_EQ(DeadlineSweep::tick_for(800ms), 100ms);
  EXPECT_EQ(DeadlineSweep::tick_for(10ms), 5ms);
  EXPECT_EQ(DeadlineSweep::tick_for(1h), 250ms);
}

}  // namespace
}  // namespace sluice::proxy
