// SPDX-License-Identifier: Apache-2.0
// store::RedisStore across a Redis restart (docs/distributed.md, "When Redis is away"): a
// restarted Redis has lost its data, hash key included; until the new hash key is read, a
// thread decides by its fallback, so no decision counts under the key the lost Redis had (the
// soak test once saw a limited user admitted limit + 1 times in one Redis lifetime that way).
#include <gtest/gtest.h>
#include <spdlog/logger.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "gateway/core/clock.hpp"
#include "gateway/core/random.hpp"
#include "gateway/store/redis_store.hpp"
#include "tests/support/redis_server.hpp"

namespace sluice::store {
namespace {

using namespace std::chrono_literals;
namespace net = boost::asio;

class RedisStoreReconnectTest : public ::testing::Test {
 protected:
  RedisStoreReconnectTest() {
    RedisStore::Options o;
    o.port = redis.port();
    o.timeout = 500ms;
    o.on_error = RedisStore::OnError::kDeny;  // a fallback decision admits nobody
    store = std::make_unique<RedisStore>(clock, random, o, RedisStore::Observer{},
                                         std::make_shared<spdlog::logger>("test"));
    slot = store->attach(ioc);
    limiter::Policy tight;
    tight.name = "tight";
    tight.requests = 2;
    tight.window = 60s;
    tight.buckets = 6;
    policy = store->apply(tight);
    store->start();
  }
  ~RedisStoreReconnectTest() override { store->stop(); }
  RedisStoreReconnectTest(const RedisStoreReconnectTest&) = delete;
  RedisStoreReconnectTest& operator=(const RedisStoreReconnectTest&) = delete;

  /// One decision for user "u": at once when this thread decides by its fallback, else by
  /// Redis (the io_context runs until the answer; other handlers run meanwhile).
  limiter::LimitDecision decide() {
    if (auto now = store->try_decide(slot, policy, "u")) {
      return *now;
    }
    std::optional<limiter::LimitDecision> answer;
    store->async_decide(
        slot, policy, "u",
        DecisionCompletion{ioc.get_executor(), [&](limiter::LimitDecision d) { answer = d; }});
    while (!answer && ioc.run_one_for(5s) > 0) {
    }
    EXPECT_TRUE(answer.has_value());
    return answer.value_or(limiter::LimitDecision{});
  }

  /// Runs the io_context one handler at a time, deciding after each, until `redis_decisions`
  /// decisions were made by Redis (not unavailable) or 10 s passed; returns how many Redis
  /// admitted.
  int admitted_by_redis(int redis_decisions) {
    int decided = 0;
    int admitted = 0;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (decided < redis_decisions && std::chrono::steady_clock::now() < deadline) {
      ioc.run_one_for(10ms);
      const limiter::LimitDecision d = decide();
      if (!d.unavailable) {
        ++decided;
        admitted += d.allowed ? 1 : 0;
      }
    }
    EXPECT_EQ(decided, redis_decisions) << "Redis did not decide in time";
    return admitted;
  }

  RedisServer redis;
  core::SteadyClock clock;
  core::SystemRandom random;
  net::io_context ioc;
  std::unique_ptr<RedisStore> store;
  StoreSlot slot{};
  PolicyId policy{};
};

TEST_F(RedisStoreReconnectTest, ARestartedRedisCountsEachUserOnceUnderItsNewHashKey) {
  EXPECT_EQ(admitted_by_redis(4), 2);  // the limit, then refusals
  redis.stop();
  redis.start();  // empty: its windows and the hash key are gone
  // Every decision from the moment the connection is back: the first ones by the fallback
  // (refused, unavailable) until the new hash key is read, then by Redis under it.
  EXPECT_EQ(admitted_by_redis(6), 2);
}

}  // namespace
}  // namespace sluice::store
