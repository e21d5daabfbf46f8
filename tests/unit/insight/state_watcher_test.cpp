// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/state_watcher.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/manual_clock.hpp"
#include "tests/support/scripted_random.hpp"

namespace sluice::insight {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

/// The events as (type, data) pairs, for whole-list comparisons.
std::vector<std::pair<std::string, json>> watcher_events(const std::vector<StateEvent>& events) {
  std::vector<std::pair<std::string, json>> out;
  for (const auto& e : events) {
    out.emplace_back(e.type, e.data);
  }
  return out;
}

TEST(StateChangesTest, NothingChangedNothingToSay) {
  StateSample s;
  s.breakers = {{"a", 0.0}, {"b", 0.4}};
  s.endpoints = {{{"a", "h:1"}, "healthy"}};
  EXPECT_TRUE(state_changes(s, s).empty());
}

TEST(StateChangesTest, BreakerOpensWhenItsDropProbabilityLeavesZeroAndClosesWhenItReturns) {
  StateSample before;
  before.breakers = {{"a", 0.0}, {"b", 0.5}, {"c", 0.2}};
  StateSample after;
  after.breakers = {{"a", 0.25}, {"b", 0.0}, {"c", 0.6}};  // c stays open: no event
  EXPECT_EQ(watcher_events(state_changes(before, after)),
            (std::vector<std::pair<std::string, json>>{
                {"breaker_open", {{"backend", "a"}, {"drop_probability", 0.25}}},
                {"breaker_close", {{"backend", "b"}}},
            }));
}

TEST(StateChangesTest, NewBackendsStartClosedAndRemovedOpenOnesClose) {
  StateSample before;
  before.breakers = {{"gone_open", 0.3}, {"gone_closed", 0.0}};
  StateSample after;
  after.breakers = {{"new_open", 0.1}, {"new_closed", 0.0}};
  EXPECT_EQ(watcher_events(state_changes(before, after)),
            (std::vector<std::pair<std::string, json>>{
                {"breaker_open", {{"backend", "new_open"}, {"drop_probability", 0.1}}},
                {"breaker_close", {{"backend", "gone_open"}}},
            }));
}

TEST(StateChangesTest, StoreFallbackOnAndOff) {
  StateSample off;
  StateSample on;
  on.store_fallback = true;
  EXPECT_EQ(watcher_events(state_changes(off, on)),
            (std::vector<std::pair<std::string, json>>{{"store_fallback", {{"on", true}}}}));
  EXPECT_EQ(watcher_events(state_changes(on, off)),
            (std::vector<std::pair<std::string, json>>{{"store_fallback", {{"on", false}}}}));
}

TEST(StateChangesTest, EndpointStatesChangedOnlyForEndpointsInBoth) {
  StateSample before;
  before.endpoints = {{{"a", "h:1"}, "healthy"}, {{"a", "h:2"}, "healthy"}, {{"a", "old:1"}, "x"}};
  StateSample after;
  after.endpoints = {{{"a", "h:1"}, "ejected"}, {{"a", "h:2"}, "healthy"}, {{"a", "new:1"}, "y"}};
  EXPECT_EQ(
      watcher_events(state_changes(before, after)),
      (std::vector<std::pair<std::string, json>>{
          {"endpoint_state",
           {{"backend", "a"}, {"endpoint", "h:1"}, {"from", "healthy"}, {"to", "ejected"}}}}));
}

TEST(BreakerHistoryTest, KeepsTheLastPointsOldestFirstAndForgetsRemovedBackends) {
  BreakerHistory history(3);
  history.record({{"a", 0.0}, {"b", 0.1}});
  history.record({{"a", 0.2}, {"b", 0.2}});
  history.record({{"a", 0.4}});
  history.record({{"a", 0.5}, {"c", 0.9}});
  EXPECT_EQ(history.to_json(5000ms),
            (json{{"interval_ms", 5000}, {"backends", {{"a", {0.2, 0.4, 0.5}}, {"c", {0.9}}}}}));
}

class StateWatcherTest : public ::testing::Test {
 protected:
  StateWatcherTest() {
    config::BackendConfig backend;
    backend.endpoints = {{"10.0.0.1", 80}, {"10.0.0.2", 80}};
    health_.sync("api", backend);
    breaker_ = breakers_.sync("api", {});
  }

  /// Enough failures that the default breaker (protection 5) drops: p = (8 - 5) / 9.
  void fail_upstream() {
    for (int i = 0; i < 8; ++i) {
      breaker_->record(breaker::Outcome::kFailure);
    }
  }

  testing::ManualClock clock_;
  testing::ScriptedRandom random_;
  breaker::BreakerRegistry breakers_{clock_, random_};
  health::HealthRegistry health_;
  std::shared_ptr<breaker::AdaptiveBreaker> breaker_;
  bool fallback_ = false;
  std::vector<std::pair<std::string, json>> published_;
  boost::asio::io_context ioc_;
  StateWatcher watcher_{ioc_.get_executor(), clock_,
                        StateWatcher::Sources{breakers_, health_, [this] { return fallback_; }},
                        [this](std::string_view type, json data) {
                          published_.emplace_back(std::string(type), std::move(data));
                        }};
};

TEST_F(StateWatcherTest, TheBaselinePublishesNothingEvenWhenSomethingIsAlreadyOff) {
  fail_upstream();
  fallback_ = true;
  watcher_.take_baseline();
  watcher_.poll();
  EXPECT_TRUE(published_.empty());
}

TEST_F(StateWatcherTest, PublishesEachChangeOnceAtThePollThatSeesIt) {
  watcher_.take_baseline();
  fail_upstream();
  fallback_ = true;
  ASSERT_TRUE(health_.find("api")->set_draining("10.0.0.2:80", true));
  watcher_.poll();
  watcher_.poll();  // nothing new
  EXPECT_EQ(published_, (std::vector<std::pair<std::string, json>>{
                            {"breaker_open", {{"backend", "api"}, {"drop_probability", 3.0 / 9.0}}},
                            {"store_fallback", {{"on", true}}},
                            {"endpoint_state",
                             {{"backend", "api"},
                              {"endpoint", "10.0.0.2:80"},
                              {"from", "healthy"},
                              {"to", "draining"}}},
                        }));
  published_.clear();
  clock_.advance(10s);  // the failures leave the breaker's 10 s window
  watcher_.poll();
  EXPECT_EQ(published_,
            (std::vector<std::pair<std::string, json>>{{"breaker_close", {{"backend", "api"}}}}));
}

TEST_F(StateWatcherTest, RecordsTheBreakerHistoryEveryFiveSeconds) {
  watcher_.take_baseline();  // the first point
  fail_upstream();
  clock_.advance(StateWatcher::kHistoryInterval - 1ns);
  watcher_.poll();
  EXPECT_EQ(watcher_.breaker_history()["backends"]["api"], json({0.0}));
  clock_.advance(1ns);
  watcher_.poll();
  EXPECT_EQ(watcher_.breaker_history()["backends"]["api"], json({0.0, 3.0 / 9.0}));
  EXPECT_EQ(watcher_.breaker_history()["interval_ms"], 5000);
  watcher_.poll();
  EXPECT_EQ(watcher_.breaker_history()["backends"]["api"].size(), 2U) << "one point per 5 s";
}

TEST_F(StateWatcherTest, KeepsFiveMinutesOfHistory) {
  watcher_.take_baseline();
  for (int i = 0; i < 100; ++i) {
    clock_.advance(StateWatcher::kHistoryInterval);
    watcher_.poll();
  }
  EXPECT_EQ(watcher_.breaker_history()["backends"]["api"].size(), 60U);
}

}  // namespace
}  // namespace sluice::insight
