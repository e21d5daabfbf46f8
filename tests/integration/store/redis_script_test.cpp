// SPDX-License-Identifier: Apache-2.0
// The sliding-window Lua script against a real Redis: the same window as the memory store.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gateway/store/redis_scripts.hpp"
#include "tests/support/redis_server.hpp"

namespace sluice::store {
namespace {

using testing::RedisServer;

class RedisScriptTest : public ::testing::Test {
 protected:
  RedisServer redis;

  struct Result {
    int allowed = 0;
    long long count = 0;
    long long limit = 0;
    long long reset_ms = 0;
    long long retry_ms = 0;
  };

  /// Runs the script with EVALSHA (loading it first) on `key`.
  Result call(const std::string& key, int limit, int window_ms, int buckets, bool count = true) {
    if (!loaded_) {
      EXPECT_EQ(redis.command({"SCRIPT", "LOAD", std::string(sliding_window_script().source)}),
                sliding_window_script().sha1);
      loaded_ = true;
    }
    const std::string text =
        redis.command({"EVALSHA", sliding_window_script().sha1, "1", key, std::to_string(limit),
                       std::to_string(window_ms), std::to_string(buckets), count ? "1" : "0"});
    Result r;
    EXPECT_EQ(std::sscanf(text.c_str(), "%d,%lld,%lld,%lld,%lld", &r.allowed, &r.count,  // NOLINT
                          &r.limit, &r.reset_ms, &r.retry_ms),
              5)
        << text;
    return r;
  }

 private:
  bool loaded_ = false;
};

TEST_F(RedisScriptTest, AdmitsExactlyTheLimitThenDeniesWithoutCounting) {
  for (int i = 1; i <= 3; ++i) {
    const Result r = call("{p:k}", 3, 60000, 10);
    EXPECT_EQ(r.allowed, 1);
    EXPECT_EQ(r.count, i);
    EXPECT_EQ(r.limit, 3);
    // The first bucket (6 s) leaves in 54..60 s, or up to one bucket earlier when the calls
    // straddle a bucket boundary (seen in CI: exactly 54000, then 53999).
    EXPECT_GE(r.reset_ms, 48000);
    EXPECT_LE(r.reset_ms, 60000);
    EXPECT_EQ(r.retry_ms, 0);
  }
  const Result denied = call("{p:k}", 3, 60000, 10);
  EXPECT_EQ(denied.allowed, 0);
  EXPECT_EQ(denied.count, 3);  // a denied request is not counted
  EXPECT_GE(denied.retry_ms, 48000);
  EXPECT_LE(denied.retry_ms, 60000);
  EXPECT_EQ(call("{p:other}", 3, 60000, 10).count, 1);  // keys apart
}

TEST_F(RedisScriptTest, InspectingCountsNothing) {
  call("{p:k}", 5, 60000, 10);
  const Result r = call("{p:k}", 5, 60000, 10, /*count=*/false);
  EXPECT_EQ(r.count, 1);
  EXPECT_EQ(call("{p:k}", 5, 60000, 10, false).count, 1);
  EXPECT_EQ(call("{p:never}", 5, 60000, 10, false).count, 0);
  EXPECT_EQ(redis.command({"EXISTS", "{p:never}"}), "0");  // nothing stored for a lookup
}

TEST_F(RedisScriptTest, OldBucketsSlideOutOfTheWindow) {
  constexpr std::int64_t kWidth = 100;  // 400 ms in 4 buckets, on Redis' clock
  EXPECT_EQ(call("{p:k}", 2, 400, 4).allowed, 1);
  EXPECT_EQ(call("{p:k}", 2, 400, 4).allowed, 1);
  const std::int64_t last_counted_bucket = redis.time_ms() / kWidth;
  EXPECT_EQ(call("{p:k}", 2, 400, 4).allowed, 0);
  // Time passing is the behaviour: a whole window after the bucket of the last count.
  ASSERT_TRUE(testing::wait_for_redis_clock(redis, (last_counted_bucket + 4) * kWidth));
  const Result r = call("{p:k}", 2, 400, 4);
  EXPECT_EQ(r.allowed, 1);
  EXPECT_EQ(r.count, 1);
  // A fixed-size ring: the shape, the head, the running total, the oldest bucket with a count
  // and 4 counters of 4 bytes.
  EXPECT_EQ(redis.command({"HLEN", "{p:k}"}), "5");
  EXPECT_EQ(redis.command({"HGET", "{p:k}", "t"}), "1");
  EXPECT_EQ(redis.command({"HGET", "{p:k}", "o"}), redis.command({"HGET", "{p:k}", "h"}));
  EXPECT_EQ(redis.command({"HSTRLEN", "{p:k}", "c"}), "16");
}

TEST_F(RedisScriptTest, APartialSlideDropsOnlyTheBucketsThatLeft) {
  // Buckets of 300 ms on Redis' clock; each step starts 30 ms into a bucket (waiting on Redis'
  // clock: time passing is the behaviour under test).
  constexpr std::int64_t kWidth = 300;
  const auto into_bucket = [&](std::int64_t bucket) {
    return testing::wait_for_redis_clock(redis, bucket * kWidth + 30);
  };
  const std::int64_t first = redis.time_ms() / kWidth + 1;
  ASSERT_TRUE(into_bucket(first));
  EXPECT_EQ(call("{p:s}", 10, 4 * kWidth, 4).count, 1);
  EXPECT_EQ(call("{p:s}", 10, 4 * kWidth, 4).count, 2);
  ASSERT_TRUE(into_bucket(first + 2));
  Result r = call("{p:s}", 10, 4 * kWidth, 4);
  EXPECT_EQ(r.count, 3);
  EXPECT_GT(r.reset_ms, 0);  // the first bucket leaves at (first + 4) * width
  EXPECT_LE(r.reset_ms, 2 * kWidth);
  // The first bucket has left; its slot in the ring is the current bucket's now.
  ASSERT_TRUE(into_bucket(first + 4));
  r = call("{p:s}", 10, 4 * kWidth, 4);
  EXPECT_EQ(r.count, 2);
  EXPECT_GT(r.reset_ms, kWidth);  // the oldest count is now the one of bucket first + 2
  EXPECT_LE(r.reset_ms, 2 * kWidth);
  EXPECT_EQ(redis.command({"HGET", "{p:s}", "t"}), "2");
  EXPECT_EQ(redis.command({"HGET", "{p:s}", "o"}), std::to_string(first + 2));
  // Inspecting in a later bucket sees the same total and writes nothing.
  ASSERT_TRUE(into_bucket(first + 5));
  EXPECT_EQ(call("{p:s}", 10, 4 * kWidth, 4, /*count=*/false).count, 2);
  EXPECT_EQ(redis.command({"HGET", "{p:s}", "h"}), std::to_string(first + 4));
}

TEST_F(RedisScriptTest, TheLimitArgumentIsTheOverride) {
  EXPECT_EQ(call("{p:vip}", 1, 60000, 10).allowed, 1);
  EXPECT_EQ(call("{p:vip}", 1, 60000, 10).allowed, 0);
  const Result raised = call("{p:vip}", 5, 60000, 10);  // the same counts, a higher limit
  EXPECT_EQ(raised.allowed, 1);
  EXPECT_EQ(raised.count, 2);
  const Result blocked = call("{p:blocked}", 0, 60000, 10);
  EXPECT_EQ(blocked.allowed, 0);
  EXPECT_EQ(blocked.retry_ms, 60000);  // a blocking override: one whole window
}

TEST_F(RedisScriptTest, TheHashExpiresAboutOneWindowAfterItsLastWrite) {
  call("{p:k}", 5, 60000, 10);
  const long long ttl = std::stoll(redis.command({"PTTL", "{p:k}"}));
  EXPECT_GT(ttl, 60000);
  EXPECT_LE(ttl, 66000);  // window + one bucket
}

TEST_F(RedisScriptTest, TheTtlIsSetOncePerBucketAndOutlastsItsCounts) {
  // The first write in a bucket sets a window plus a bucket; later writes in the same bucket
  // leave it (one call fewer), and it still outlasts the bucket's counts, which leave the window
  // at most one window after the bucket started.
  call("{p:k}", 5, 600000, 10);
  const std::string head = redis.command({"HGET", "{p:k}", "h"});
  const long long first = std::stoll(redis.command({"PTTL", "{p:k}"}));
  const Result r = call("{p:k}", 5, 600000, 10);
  ASSERT_EQ(r.allowed, 1);
  const long long second = std::stoll(redis.command({"PTTL", "{p:k}"}));
  if (redis.command({"HGET", "{p:k}", "h"}) == head) {  // (not across a 60 s bucket boundary)
    EXPECT_LE(second, first);
  }
  EXPECT_GT(second, 600000);  // the newest count leaves within 600 s
  EXPECT_LE(second, 660000);
}

TEST_F(RedisScriptTest, ANewShapeCarriesTheInWindowCountIntoTheCurrentBucket) {
  for (int i = 0; i < 3; ++i) {
    call("{p:k}", 5, 60000, 10);
  }
  const Result reshaped = call("{p:k}", 5, 30000, 60, /*count=*/false);
  EXPECT_EQ(reshaped.count, 3);  // never a fresh allowance
  EXPECT_EQ(redis.command({"HGET", "{p:k}", "g"}), "500:60");
  EXPECT_EQ(call("{p:k}", 5, 30000, 60).count, 4);
  EXPECT_EQ(call("{p:k}", 5, 30000, 60).count, 5);
  EXPECT_EQ(call("{p:k}", 5, 30000, 60).allowed, 0);
}

}  // namespace
}  // namespace sluice::store
