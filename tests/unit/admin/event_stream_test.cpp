// SPDX-License-Identifier: Apache-2.0
// A streaming admin reply over loopback: AdminServer with a handler that answers
// event_stream_reply (a 50 ms heartbeat instead of 15 s), read by the tests' SSE client.
#include "gateway/admin/event_stream.hpp"

#include <gtest/gtest.h>
#include <spdlog/logger.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <memory>
#include <thread>

#include "gateway/admin/admin_server.hpp"
#include "gateway/insight/event_feed.hpp"
#include "tests/support/event_stream_client.hpp"

namespace sluice::admin {
namespace {

namespace net = boost::asio;
using std::chrono::milliseconds;

class EventStreamTest : public ::testing::Test {
 protected:
  EventStreamTest() {
    net::ip::tcp::acceptor acceptor(ioc_, {net::ip::address_v4::loopback(), 0});
    port_ = acceptor.local_endpoint().port();
    server_ = std::make_shared<AdminServer>(
        std::move(acceptor),
        [this](const Request& req, const net::ip::tcp::endpoint&) -> net::awaitable<Reply> {
          co_return event_stream_reply(req, &feed_, log_, "test", heartbeat_.load());
        },
        log_);
    server_->start();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~EventStreamTest() override {
    net::post(ioc_, [this] {
      server_->stop();
      ioc_.stop();
    });
    thread_.join();
  }
  EventStreamTest(const EventStreamTest&) = delete;
  EventStreamTest& operator=(const EventStreamTest&) = delete;

  /// Runs `fn` on the feed's thread and waits for it.
  template <typename Fn>
  auto on_feed_thread(Fn fn) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    net::post(ioc_, [&task] { task(); });
    return result.get();
  }

  net::io_context ioc_{1};
  std::atomic<milliseconds> heartbeat_{milliseconds(50)};
  std::shared_ptr<spdlog::logger> log_ = std::make_shared<spdlog::logger>("event_stream_test");
  insight::EventFeed feed_;
  std::shared_ptr<AdminServer> server_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

TEST_F(EventStreamTest, StreamsEventsAsTheyComeAndAHeartbeatInTheSilences) {
  testing::EventStreamClient client(port_);
  ASSERT_EQ(client.status(), 200U);
  EXPECT_EQ(client.header("transfer-encoding"), "chunked");
  EXPECT_EQ(client.header("content-length"), "");
  EXPECT_EQ(client.header("connection"), "close");
  on_feed_thread([this] { return feed_.publish("reload", {{"ok", true}}); });
  const auto event = client.next(milliseconds(1000));
  ASSERT_TRUE(event);
  EXPECT_EQ(event->type, "reload");
  EXPECT_EQ(event->id, 1U);
  EXPECT_EQ(event->json()["ok"], true);
  // Nothing more to say: only heartbeats (comment lines), one per 50 ms here.
  EXPECT_FALSE(client.next(milliseconds(300)));
  EXPECT_GE(client.comments(), 2U);
}

TEST_F(EventStreamTest, ClosingTheFeedEndsTheBodyCleanlyAfterWhatWasQueued) {
  testing::EventStreamClient client(port_);
  ASSERT_EQ(client.status(), 200U);
  on_feed_thread([this] {
    feed_.publish("a", nlohmann::json::object());
    feed_.close();
    return 0;
  });
  const auto event = client.next(milliseconds(1000));
  ASSERT_TRUE(event);
  EXPECT_EQ(event->type, "a");
  EXPECT_TRUE(client.closed_by_peer(milliseconds(1000)));
  EXPECT_TRUE(client.ended_cleanly());
}

TEST_F(EventStreamTest, AClientThatLeavesIsNoticedWithoutAWrite) {
  heartbeat_ = milliseconds(60000);  // no write for a minute
  {
    testing::EventStreamClient client(port_);
    ASSERT_EQ(client.status(), 200U);
    EXPECT_EQ(on_feed_thread([this] { return feed_.subscribers(); }), 1U);
  }
  // No event and no heartbeat needed: the server's read sees the close. Bounded: 100 x 10 ms.
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = on_feed_thread([this] { return feed_.subscribers(); }) == 0;
    if (!gone) {
      std::this_thread::sleep_for(milliseconds(10));
    }
  }
  EXPECT_TRUE(gone);
}

}  // namespace
}  // namespace sluice::admin
