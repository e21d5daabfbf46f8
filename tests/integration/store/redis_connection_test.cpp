// SPDX-License-Identifier: Apache-2.0
// RedisConnection against a real Redis: pipelining, per-command timeouts, setup, and coming
// back by itself after an outage.
#include "gateway/store/redis_connection.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>

#include "gateway/core/random.hpp"
#include "gateway/store/redis_scripts.hpp"
#include "tests/support/redis_server.hpp"

namespace sluice::store {
namespace {

using std::chrono::milliseconds;
using testing::RedisServer;

class RedisConnectionTest : public ::testing::Test {
 protected:
  RedisServer redis;
  boost::asio::io_context ioc;
  core::SteadyClock clock;
  core::SystemRandom random;
  std::shared_ptr<spdlog::logger> log = std::make_shared<spdlog::logger>(
      "redis-test", std::make_shared<spdlog::sinks::null_sink_mt>());

  RedisConnection::Options options(milliseconds timeout = milliseconds(200)) const {
    RedisConnection::Options o;
    o.port = redis.port();
    o.timeout = timeout;
    o.backoff_initial = milliseconds(20);
    o.backoff_max = milliseconds(100);
    return o;
  }

  std::shared_ptr<RedisConnection> connect(RedisConnection::Options o) {
    auto connection = std::make_shared<RedisConnection>(ioc, std::move(o), clock, random, log);
    connection->start();
    EXPECT_TRUE(run_until([&] { return connection->ready(); })) << "never ready";
    return connection;
  }

  /// Whether, once Redis answers in time again, a command gets its own reply (late replies to
  /// timed-out commands were skipped): ECHO until one is answered, which must be its echo.
  bool back_in_step(RedisConnection& connection) {
    std::optional<RedisOutcome> after;
    const bool answered = run_until([&] {
      if (!after || after->status != RedisStatus::kOk) {
        after.reset();
        connection.execute(format_command({"ECHO", "in-step"}),
                           [&](RedisOutcome outcome) { after = outcome; });
        ioc.run_for(milliseconds(100));
      }
      return after && after->status == RedisStatus::kOk;
    });
    return answered && after->reply.text == "in-step";
  }

  /// Runs the io_context until `done` or 5 s.
  bool run_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      ioc.run_for(milliseconds(5));
    }
    return done();
  }
};

TEST_F(RedisConnectionTest, PipelinesManyCommandsAndMatchesRepliesInOrder) {
  auto connection = connect(options());
  constexpr int kCommands = 1000;
  std::vector<long long> replies;
  std::size_t most_in_flight = 0;
  for (int i = 0; i < kCommands; ++i) {
    connection->execute(format_command({"INCR", "counter"}), [&](RedisOutcome outcome) {
      ASSERT_EQ(outcome.status, RedisStatus::kOk);
      replies.push_back(outcome.reply.integer);
    });
    most_in_flight = std::max(most_in_flight, connection->in_flight());
  }
  EXPECT_EQ(most_in_flight, static_cast<std::size_t>(kCommands));  // all sent before any reply
  ASSERT_TRUE(run_until([&] { return replies.size() == kCommands; }));
  for (int i = 0; i < kCommands; ++i) {
    EXPECT_EQ(replies[static_cast<std::size_t>(i)], i + 1);
  }
}

TEST_F(RedisConnectionTest, RunsSetupBeforeTakingCommands) {
  auto o = options();
  std::vector<RedisReply> seen;
  o.setup = [] {
    return std::vector<std::string>{
        format_command({"SCRIPT", "LOAD", std::string(sliding_window_script().source)}),
        format_command({"SET", "marker", "x"})};
  };
  o.on_ready = [&](const std::vector<RedisReply>& replies) { seen = replies; };
  auto connection = connect(std::move(o));
  ASSERT_EQ(seen.size(), 2U);
  EXPECT_EQ(seen[0].text, sliding_window_script().sha1);
  EXPECT_EQ(seen[1].text, "OK");
}

TEST_F(RedisConnectionTest, ASlowCommandTimesOutAndItsLateReplyIsSkipped) {
  auto connection = connect(options(milliseconds(50)));
  std::optional<RedisStatus> slow;
  const auto started = std::chrono::steady_clock::now();
  auto waited = milliseconds(0);
  connection->execute(format_command({"DEBUG", "SLEEP", "0.3"}), [&](RedisOutcome outcome) {
    slow = outcome.status;
    waited = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
  });
  std::optional<RedisOutcome> ping;
  connection->execute(format_command({"PING"}), [&](RedisOutcome outcome) { ping = outcome; });
  ASSERT_TRUE(run_until([&] { return slow.has_value() && ping.has_value(); }));
  EXPECT_EQ(*slow, RedisStatus::kTimeout);
  EXPECT_LT(waited, milliseconds(250));  // answered at its deadline, not when Redis woke up
  EXPECT_EQ(ping->status, RedisStatus::kTimeout);  // queued behind the sleep
  // Once Redis is awake, the connection is in step again: the late replies were skipped.
  EXPECT_TRUE(back_in_step(*connection));
}

TEST_F(RedisConnectionTest, AGroupOfCommandsGetsAllItsRepliesInOrderBetweenOthers) {
  auto connection = connect(options());
  std::vector<std::string> order;
  connection->execute(format_command({"INCR", "n"}), [&](RedisOutcome outcome) {
    order.push_back("single " + std::to_string(outcome.reply.integer));
  });
  const std::string group = format_command({"INCR", "n"}) +
                            format_command({"HSET", "h", "f", "7"}) +
                            format_command({"HGETALL", "h"}) + format_command({"GET", "h"});
  std::optional<RedisStatus> status;
  std::vector<RedisReply> replies;
  connection->execute_group(group, 4, [&](RedisStatus s, std::vector<RedisReply> r) {
    status = s;
    replies = std::move(r);
    order.push_back("group");
  });
  EXPECT_EQ(connection->in_flight(), 2U);  // one pending entry for the whole group
  connection->execute(format_command({"INCR", "n"}), [&](RedisOutcome outcome) {
    order.push_back("single " + std::to_string(outcome.reply.integer));
  });
  ASSERT_TRUE(run_until([&] { return order.size() == 3; }));
  EXPECT_EQ(order, (std::vector<std::string>{"single 1", "group", "single 3"}));
  ASSERT_EQ(status, RedisStatus::kOk);
  ASSERT_EQ(replies.size(), 4U);
  EXPECT_EQ(replies[0].integer, 2);
  EXPECT_EQ(replies[1].integer, 1);
  ASSERT_EQ(replies[2].elements.size(), 2U);
  EXPECT_EQ(replies[2].elements[1].text, "7");
  EXPECT_TRUE(replies[3].is_error());  // a wrong type: an error reply in its place, not a failure
}

TEST_F(RedisConnectionTest, ASlowGroupTimesOutOnceAndItsLateRepliesAreSkipped) {
  auto connection = connect(options(milliseconds(50)));
  int answers = 0;
  std::optional<RedisStatus> status;
  const std::string group = format_command({"DEBUG", "SLEEP", "0.3"}) + format_command({"PING"}) +
                            format_command({"PING"});
  connection->execute_group(group, 3, [&](RedisStatus s, const std::vector<RedisReply>& r) {
    ++answers;
    status = s;
    EXPECT_TRUE(r.empty());
  });
  ASSERT_TRUE(run_until([&] { return status.has_value(); }));
  EXPECT_EQ(*status, RedisStatus::kTimeout);
  // The group's three late replies are skipped; the next command gets its own.
  EXPECT_TRUE(back_in_step(*connection));
  EXPECT_EQ(answers, 1);
}

TEST_F(RedisConnectionTest, AGroupIsAnsweredUnavailableWhenTheConnectionIsLost) {
  auto connection = connect(options(milliseconds(2000)));
  std::optional<RedisStatus> status;
  connection->execute_group(format_command({"DEBUG", "SLEEP", "0.5"}) + format_command({"PING"}), 2,
                            [&](RedisStatus s, const std::vector<RedisReply>&) { status = s; });
  ioc.run_for(milliseconds(50));
  redis.stop();
  ASSERT_TRUE(run_until([&] { return status.has_value(); }));
  EXPECT_EQ(*status, RedisStatus::kUnavailable);
  std::optional<RedisStatus> later;
  connection->execute_group(format_command({"PING"}), 1,
                            [&](RedisStatus s, const std::vector<RedisReply>&) { later = s; });
  EXPECT_EQ(later, RedisStatus::kUnavailable);  // at once, while Redis is down
}

TEST_F(RedisConnectionTest, AnswersAtOnceWhileRedisIsDownAndComesBackByItself) {
  auto o = options();
  int downs = 0;
  o.on_down = [&](const std::string&) { ++downs; };
  auto connection = connect(std::move(o));
  redis.stop();
  ASSERT_TRUE(run_until([&] { return !connection->ready(); }));
  EXPECT_EQ(downs, 1);
  std::optional<RedisStatus> status;
  connection->execute(format_command({"PING"}),
                      [&](RedisOutcome outcome) { status = outcome.status; });
  ASSERT_TRUE(status.has_value());  // inside the call: nobody waits on a dead Redis
  EXPECT_EQ(*status, RedisStatus::kUnavailable);
  redis.start();
  ASSERT_TRUE(run_until([&] { return connection->ready(); }));
  std::optional<RedisOutcome> pong;
  connection->execute(format_command({"PING"}), [&](RedisOutcome outcome) { pong = outcome; });
  ASSERT_TRUE(run_until([&] { return pong.has_value(); }));
  EXPECT_EQ(pong->reply.text, "PONG");
  connection->close();
}

}  // namespace
}  // namespace sluice::store
