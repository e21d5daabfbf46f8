// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/event_feed.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice::insight {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using WallTime = std::chrono::system_clock::time_point;

// 2026-11-26T12:00:00Z.
constexpr std::chrono::seconds kFeedTestEpoch{1795694400};

/// A wall clock that moves only when the test says so.
class ManualWallClock {
 public:
  [[nodiscard]] EventFeed::WallClock function() {
    return [this] { return now_; };
  }
  void advance(milliseconds d) { now_ += d; }

 private:
  WallTime now_{kFeedTestEpoch};
};

/// The `data:` JSON of one SSE record.
json data_of(const FeedRecord& record) {
  const std::string& text = *record.text;
  const auto start = text.find("\ndata: ") + 7;
  return json::parse(text.substr(start, text.find('\n', start) - start));
}

std::vector<std::uint64_t> ids_of(const std::vector<FeedRecord>& records) {
  std::vector<std::uint64_t> ids;
  for (const auto& record : records) {
    ids.push_back(record.id);
  }
  return ids;
}

class EventFeedTest : public ::testing::Test {
 protected:
  ManualWallClock wall;
  EventFeed feed{wall.function(), FeedLimits{.retained = 4, .queue = 3, .subscribers = 2}};
};

TEST(UtcTimestampTest, IsIso8601UtcWithMilliseconds) {
  EXPECT_EQ(utc_timestamp(WallTime{kFeedTestEpoch} + milliseconds(123)),
            "2026-11-26T12:00:00.123Z");
  EXPECT_EQ(utc_timestamp(WallTime{kFeedTestEpoch} + milliseconds(999)),
            "2026-11-26T12:00:00.999Z");
  EXPECT_EQ(utc_timestamp(WallTime{}), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(utc_timestamp(WallTime{} - milliseconds(1)), "1969-12-31T23:59:59.999Z");
}

TEST_F(EventFeedTest, FormatsOneSseRecordWithIdTypeAndTsFirst) {
  wall.advance(milliseconds(42));
  EXPECT_EQ(feed.publish("reload", {{"ok", true}, {"error", "x"}}), 1U);
  ASSERT_EQ(feed.retained().size(), 1U);
  EXPECT_EQ(*feed.retained().front().text,
            "id: 1\nevent: reload\n"
            "data: {\"ts\":\"2026-11-26T12:00:00.042Z\",\"error\":\"x\",\"ok\":true}\n\n");
}

TEST_F(EventFeedTest, AnObserverGetsEachEventsTypeAndBodyAsAClientDoes) {
  std::vector<std::pair<std::string, std::string>> seen;
  feed.observe([&](std::string_view type, const std::string& body) {
    seen.emplace_back(std::string(type), body);
  });
  wall.advance(milliseconds(7));
  feed.publish("breaker_state", {{"backend", "b"}});
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].first, "breaker_state");
  EXPECT_EQ(seen[0].second, R"({"ts":"2026-11-26T12:00:00.007Z","backend":"b"})");
  EXPECT_EQ(json::parse(seen[0].second), data_of(feed.retained().back()));
}

TEST_F(EventFeedTest, ATsInTheDataReplacesTheStampButKeepsItsPlace) {
  // How the fleet's stream keeps the time an event happened on its replica.
  feed.publish("admin_change", {{"ts", "2026-01-01T00:00:00.000Z"}, {"replica", "r1"}});
  EXPECT_EQ(*feed.retained().back().text,
            "id: 1\nevent: admin_change\n"
            "data: {\"ts\":\"2026-01-01T00:00:00.000Z\",\"replica\":\"r1\"}\n\n");
}

TEST_F(EventFeedTest, IdsIncreaseByOneFromOne) {
  EXPECT_EQ(feed.last_id(), 0U);
  EXPECT_EQ(feed.publish("a", json::object()), 1U);
  EXPECT_EQ(feed.publish("b", json::object()), 2U);
  EXPECT_EQ(feed.publish("c", json::object()), 3U);
  EXPECT_EQ(feed.last_id(), 3U);
}

TEST_F(EventFeedTest, DataWithNewlinesStaysOnOneDataLine) {
  feed.publish("x", {{"error", "line one\nline two\r\n"}});
  const std::string& text = *feed.retained().front().text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << text;  // id, event, data, blank
  EXPECT_EQ(data_of(feed.retained().front())["error"], "line one\nline two\r\n");
}

TEST_F(EventFeedTest, NonObjectDataGoesUnderValueAndInvalidUtf8IsReplaced) {
  feed.publish("x", 7);
  EXPECT_EQ(data_of(feed.retained().back())["value"], 7);
  feed.publish("y", {{"s", std::string("bad \xff byte")}});
  EXPECT_EQ(data_of(feed.retained().back())["s"], "bad \xEF\xBF\xBD byte");
}

TEST_F(EventFeedTest, EverySubscriberGetsTheSameRecordInOrder) {
  auto a = feed.subscribe(std::nullopt);
  auto b = feed.subscribe(std::nullopt);
  ASSERT_TRUE(a && b);
  feed.publish("one", json::object());
  feed.publish("two", json::object());
  const auto from_a = a->take();
  const auto from_b = b->take();
  EXPECT_EQ(ids_of(from_a), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(ids_of(from_b), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(from_a[0].text.get(), from_b[0].text.get()) << "formatted once, shared";
  EXPECT_TRUE(a->take().empty());
}

TEST_F(EventFeedTest, WakesItsSubscriberOnEveryPublish) {
  auto a = feed.subscribe(std::nullopt);
  int wakes = 0;
  a->on_wake([&] { ++wakes; });
  feed.publish("one", json::object());
  feed.publish("two", json::object());
  EXPECT_EQ(wakes, 2);
}

TEST_F(EventFeedTest, RetainsTheLastEventsAndReplaysThoseAfterSince) {
  for (int i = 0; i < 6; ++i) {
    feed.publish("e", json::object());
  }
  EXPECT_EQ(feed.retained().front().id, 3U);  // 4 retained: 3..6
  auto none = feed.subscribe(std::nullopt);
  EXPECT_TRUE(none->take().empty()) << "no Last-Event-ID: no replay";
  none.reset();
  auto after4 = feed.subscribe(4);
  EXPECT_EQ(ids_of(after4->take()), (std::vector<std::uint64_t>{5, 6}));
  after4.reset();
  auto all = feed.subscribe(0);  // older than what is retained: what is left, capped by the queue
  EXPECT_TRUE(all->is_dropped()) << "4 retained do not fit a queue of 3";
}

TEST_F(EventFeedTest, AnIdBeyondTheNewestReplaysEverythingRetained) {
  EventFeed big(wall.function());
  big.publish("a", json::object());
  big.publish("b", json::object());
  auto s = big.subscribe(900);  // from an earlier process: its ids were higher
  EXPECT_EQ(ids_of(s->take()), (std::vector<std::uint64_t>{1, 2}));
  auto up_to_date = big.subscribe(2);
  EXPECT_TRUE(up_to_date->take().empty());
}

TEST_F(EventFeedTest, AFullQueueDropsThatSubscriberOnlyAndFreesItsPlace) {
  auto slow = feed.subscribe(std::nullopt);
  auto fast = feed.subscribe(std::nullopt);
  bool slow_woken_dropped = false;
  slow->on_wake([&] { slow_woken_dropped = slow->is_dropped(); });
  EXPECT_EQ(feed.subscribe(std::nullopt), nullptr) << "two subscribers at most";
  for (int i = 0; i < 3; ++i) {
    feed.publish("e", json::object());
    EXPECT_EQ(ids_of(fast->take()).size(), 1U);
  }
  EXPECT_FALSE(slow->is_dropped()) << "exactly full is not overflowing";
  EXPECT_EQ(slow->queued(), 3U);
  feed.publish("e", json::object());
  EXPECT_TRUE(slow->is_dropped());
  EXPECT_TRUE(slow_woken_dropped);
  EXPECT_EQ(slow->queued(), 0U);
  EXPECT_EQ(feed.dropped(), 1U);
  EXPECT_EQ(ids_of(fast->take()), (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(feed.subscribers(), 1U);
  EXPECT_NE(feed.subscribe(std::nullopt), nullptr) << "the dropped one's place is free";
  feed.publish("e", json::object());
  EXPECT_EQ(slow->queued(), 0U) << "a dropped subscriber gets nothing more";
}

TEST_F(EventFeedTest, ReleasingASubscriptionUnsubscribes) {
  auto a = feed.subscribe(std::nullopt);
  auto b = feed.subscribe(std::nullopt);
  EXPECT_EQ(feed.subscribers(), 2U);
  a.reset();
  EXPECT_EQ(feed.subscribers(), 1U);
  EXPECT_NE(feed.subscribe(std::nullopt), nullptr);
}

TEST_F(EventFeedTest, CloseEndsEverySubscriptionAndRefusesNewOnes) {
  auto a = feed.subscribe(std::nullopt);
  feed.publish("e", json::object());
  bool woken = false;
  a->on_wake([&] { woken = true; });
  feed.close();
  EXPECT_TRUE(woken);
  EXPECT_TRUE(a->is_closed());
  EXPECT_FALSE(a->is_dropped());
  EXPECT_EQ(a->queued(), 1U) << "what was queued may still be sent";
  EXPECT_TRUE(feed.is_closed());
  EXPECT_EQ(feed.subscribe(std::nullopt), nullptr);
  EXPECT_EQ(feed.publish("late", json::object()), 2U) << "publishing still works";
  EXPECT_EQ(a->queued(), 1U) << "but the ending streams get nothing new";
  EXPECT_EQ(feed.subscribers(), 1U) << "its stream has not ended yet";
  a.reset();
  EXPECT_EQ(feed.subscribers(), 0U);
}

}  // namespace
}  // namespace sluice::insight
