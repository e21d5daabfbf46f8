// SPDX-License-Identifier: Apache-2.0
// GET /admin/events on the real binary (docs/operating.md "Live events"): admin changes and
// reloads arrive in order within a second, a failing backend's breaker opens and closes, a
// reconnecting client replays what it missed, a client that stops reading is dropped while
// the others and the proxy carry on, at most 64 clients, and a drain ends every stream.
#include <gtest/gtest.h>

#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/admin/admin_fixture.hpp"
#include "tests/support/event_stream_client.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kWithinASecond{1000};

class EventsTest : public AdminFixture {
 protected:
  static EventStreamClient::Options authorised() {
    EventStreamClient::Options options;
    options.token = kAdminToken;
    return options;
  }

  /// An SSE client that is subscribed (its head has arrived).
  static std::unique_ptr<EventStreamClient> subscribe(
      const SluiceProcess& gateway, EventStreamClient::Options options = authorised()) {
    auto client = std::make_unique<EventStreamClient>(gateway.admin_port(), std::move(options));
    EXPECT_EQ(client->status(), 200U);
    return client;
  }

  static json limit(int requests) {
    return {{"requests", requests}, {"window_ms", 60000}, {"buckets", 10}};
  }
};

TEST_F(EventsTest, AdminChangesAndReloadsArriveInOrderWithinASecond) {
  auto gateway = start();
  auto admin_client = admin(*gateway);
  EventStreamClient events(gateway->admin_port(), authorised());
  ASSERT_EQ(events.status(), 200U);
  EXPECT_EQ(events.header("content-type"), "text/event-stream");
  EXPECT_EQ(events.header("cache-control"), "no-cache");
  EXPECT_EQ(events.header("x-accel-buffering"), "no");

  ASSERT_EQ(admin_client.put("/admin/limits/p", limit(7)).status, 200U);
  const auto change = events.next(kWithinASecond);
  ASSERT_TRUE(change) << "no admin_change within 1 s";
  EXPECT_EQ(change->type, "admin_change");
  EXPECT_EQ(change->json()["resource"], "limits");
  EXPECT_EQ(change->json()["subject"], "p");
  EXPECT_TRUE(change->json()["ts"].is_string());

  json next = config;
  next["limits"]["p"] = limit(9);
  gateway->rewrite_config(next);
  gateway->reload();
  const auto reload = events.next(kWithinASecond);
  ASSERT_TRUE(reload) << "no reload within 1 s";
  EXPECT_EQ(reload->type, "reload");
  EXPECT_EQ(reload->json()["ok"], true);

  next["limits"]["p"]["requests"] = -1;
  gateway->rewrite_config(next);
  gateway->reload();
  const auto failed = events.next(kWithinASecond);
  ASSERT_TRUE(failed) << "no failed reload within 1 s";
  EXPECT_EQ(failed->type, "reload");
  EXPECT_EQ(failed->json()["ok"], false);
  EXPECT_NE(failed->json()["error"].get<std::string>().find("limits.p.requests"), std::string::npos)
      << failed->data;

  ASSERT_TRUE(change->id && reload->id && failed->id);
  EXPECT_EQ(*reload->id, *change->id + 1);
  EXPECT_EQ(*failed->id, *reload->id + 1);
}

TEST_F(EventsTest, NeedsTheTokenAndAnswersOnlyGet) {
  auto gateway = start();
  EventStreamClient anonymous(gateway->admin_port());
  EXPECT_EQ(anonymous.status(), 401U);
  EXPECT_EQ(admin(*gateway).post("/admin/events").status, 405U);
  auto options = authorised();
  options.target = "/admin/events?since=abc";
  EventStreamClient bad(gateway->admin_port(), options);
  EXPECT_EQ(bad.status(), 400U);
}

TEST_F(EventsTest, ABreakerOpensWhenItsBackendFailsAndClosesWhenItHeals) {
  config["backends"]["demo"]["breaker"] = {{"k", 1.5},
                                           {"protection", 5},
                                           {"window_ms", 1000},
                                           {"buckets", 10},
                                           {"failure_statuses", {500}}};
  auto gateway = start();
  auto events = subscribe(*gateway);
  HttpClient proxy(gateway->proxy_port());
  for (int i = 0; i < 10; ++i) {
    (void)proxy.get("/status/500", {{"X-API-Key", "user" + std::to_string(i)}});
  }
  const auto open = events->next(kWithinASecond);
  ASSERT_TRUE(open) << "no breaker_open within 1 s of the failures";
  EXPECT_EQ(open->type, "breaker_open");
  EXPECT_EQ(open->json()["backend"], "demo");
  EXPECT_GT(open->json()["drop_probability"].get<double>(), 0.0);
  // The failures leave the 1 s window: the drop probability is back to 0.
  const auto close = events->next(milliseconds(3000));
  ASSERT_TRUE(close) << "no breaker_close";
  EXPECT_EQ(close->type, "breaker_close");
  EXPECT_EQ(close->json(), (json{{"ts", close->json()["ts"]}, {"backend", "demo"}}));

  const auto history = admin(*gateway).get("/admin/insight/breakers");
  ASSERT_EQ(history.status, 200U);
  EXPECT_EQ(history.body["interval_ms"], 5000);
  ASSERT_TRUE(history.body["backends"]["demo"].is_array()) << history.body;
  EXPECT_GE(history.body["backends"]["demo"].size(), 1U);
}

TEST_F(EventsTest, LastEventIdReplaysWhatTheClientMissed) {
  auto gateway = start();
  auto admin_client = admin(*gateway);
  auto first = subscribe(*gateway);
  std::vector<SseEvent> seen;
  for (int requests : {6, 7, 8}) {
    ASSERT_EQ(admin_client.put("/admin/limits/p", limit(requests)).status, 200U);
    auto event = first->next();
    ASSERT_TRUE(event);
    seen.push_back(*event);
  }
  auto options = authorised();
  options.last_event_id = std::to_string(*seen[0].id);
  auto again = subscribe(*gateway, options);
  for (std::size_t i = 1; i < seen.size(); ++i) {
    const auto replayed = again->next(kWithinASecond);
    ASSERT_TRUE(replayed);
    EXPECT_EQ(replayed->id, seen[i].id);
    EXPECT_EQ(replayed->data, seen[i].data);
  }
  // ?since=N does the same, and live events follow the replay.
  options = authorised();
  options.target = "/admin/events?since=" + std::to_string(*seen[1].id);
  auto by_query = subscribe(*gateway, options);
  ASSERT_EQ(admin_client.put("/admin/limits/p", limit(9)).status, 200U);
  const auto replayed = by_query->next(kWithinASecond);
  const auto live = by_query->next(kWithinASecond);
  ASSERT_TRUE(replayed && live);
  EXPECT_EQ(replayed->id, seen[2].id);
  EXPECT_EQ(*live->id, *seen[2].id + 1);
}

TEST_F(EventsTest, ASlowClientIsDroppedWhileTheOthersAndTheProxyCarryOn) {
  auto gateway = start();
  auto admin_client = admin(*gateway);
  auto options = authorised();
  options.receive_buffer = 2048;
  auto slow = subscribe(*gateway, options);  // never reads from here on
  auto fast = subscribe(*gateway);
  HttpClient proxy(gateway->proxy_port());
  // The slow client can hold what fits its socket buffers and the server's, plus its queue of
  // 512 events; 1500 changes of about 200 bytes each overflow that.
  constexpr int kChanges = 1500;
  constexpr int kBatch = 50;
  std::optional<std::uint64_t> last_id;
  for (int i = 0; i < kChanges; ++i) {
    ASSERT_EQ(admin_client.put("/admin/limits/p", limit(1000 + i % 2)).status, 200U);
    if ((i + 1) % kBatch != 0) {
      continue;
    }
    for (int k = 0; k < kBatch; ++k) {
      const auto event = fast->next();
      ASSERT_TRUE(event) << "the fast client missed an event after " << i << " changes";
      ASSERT_EQ(event->type, "admin_change");
      if (last_id) {
        ASSERT_EQ(*event->id, *last_id + 1);
      }
      last_id = event->id;
    }
    ASSERT_EQ(status_for(proxy, "user" + std::to_string(i)), 200U);
  }
  // The slow client got what its own socket already held, then a reset: it was dropped, not
  // waited for, and never sent the end of the body. (A graceful close would leave the rest to
  // zero-window probes, whose backoff kept it waiting longer than this test under load.)
  ASSERT_TRUE(slow->closed_by_peer()) << "the slow client was not dropped";
  EXPECT_FALSE(slow->ended_cleanly());
  std::optional<std::uint64_t> slow_last;
  while (const auto event = slow->next(milliseconds(0))) {
    slow_last = event->id;
  }
  ASSERT_TRUE(slow_last);
  EXPECT_LT(*slow_last, *last_id);
  // Its place is free, and everyone else still hears news.
  auto late = subscribe(*gateway);
  ASSERT_EQ(admin_client.put("/admin/limits/p", limit(5)).status, 200U);
  const auto after = fast->next(kWithinASecond);
  ASSERT_TRUE(after);
  EXPECT_EQ(*after->id, *last_id + 1);
  EXPECT_TRUE(late->next(kWithinASecond));
}

TEST_F(EventsTest, AtMost64ClientsAndALeavingClientFreesItsPlace) {
  auto gateway = start();
  std::vector<std::unique_ptr<EventStreamClient>> clients;
  for (int i = 0; i < 64; ++i) {
    clients.push_back(subscribe(*gateway));
  }
  EventStreamClient refused(gateway->admin_port(), authorised());
  EXPECT_EQ(refused.status(), 503U);
  EXPECT_EQ(refused.header("retry-after"), "5");
  clients.pop_back();  // closes its connection: the server notices without writing to it
  ASSERT_TRUE(wait_until("a place for a new client", [&] {
    EventStreamClient probe(gateway->admin_port(), authorised());
    return probe.status() == 200U;
  }));
}

TEST_F(EventsTest, ADrainEndsEveryStreamCleanlyAndAtOnce) {
  auto gateway = start();
  auto events = subscribe(*gateway);
  ASSERT_TRUE(gateway->process().send_signal(SIGTERM));
  EXPECT_TRUE(events->closed_by_peer(kWithinASecond));
  EXPECT_TRUE(events->ended_cleanly()) << "the stream ended without its last chunk";
}

}  // namespace
}  // namespace sluice::testing
