// SPDX-License-Identifier: Apache-2.0
// The sliding-window Lua script against a real Redis: the same window as the memory store.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <sstream>
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

  /// One key of a call: its limit, shape and mode.
  struct Key {
    std::string name;
    int limit = 0;
    int window_ms = 60000;
    int buckets = 10;
    bool count = true;
  };

  /// Runs the script with EVALSHA (loading it first) on `keys`, in one call.
  std::vector<Result> call_batch(const std::vector<Key>& keys) {
    if (!loaded_) {
      EXPECT_EQ(redis.command({"SCRIPT", "LOAD", std::string(sliding_window_script().source)}),
                sliding_window_script().sha1);
      loaded_ = true;
    }
    // Each key's own shape triple (the script takes shared ones too: OneCallSharesAShape...).
    std::vector<std::string> args{"EVALSHA", sliding_window_script().sha1,
                                  std::to_string(keys.size())};
    for (const Key& k : keys) {
      args.push_back(k.name);
    }
    args.push_back(std::to_string(keys.size()));
    for (const Key& k : keys) {
      args.push_back(std::to_string(k.limit));
      args.push_back(std::to_string(k.window_ms));
      args.push_back(std::to_string(k.buckets));
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      args.push_back(std::to_string(2 * i + (keys[i].count ? 1 : 0)));
    }
    std::string reply = redis.command(args);  // "1,1,3,59694,0,..." (five integers per key)
    std::replace(reply.begin(), reply.end(), ',', ' ');
    std::istringstream text(reply);
    std::vector<Result> results(keys.size());
    for (Result& r : results) {
      text >> r.allowed >> r.count >> r.limit >> r.reset_ms >> r.retry_ms;
    }
    EXPECT_FALSE(text.fail()) << reply;
    std::string rest;
    EXPECT_FALSE(text >> rest) << "more than five integers per key: " << reply;
    return results;
  }

  /// Runs the script on `key` alone.
  Result call(const std::string& key, int limit, int window_ms, int buckets, bool count = true) {
    return call_batch({{key, limit, window_ms, buckets, count}}).front();
  }

  /// Waits for Redis' clock to be 30 ms into bucket `bucket` of `width_ms` (time passing is
  /// the behaviour under test).
  ::testing::AssertionResult into(std::int64_t bucket, std::int64_t width_ms) {
    return testing::wait_for_redis_clock(redis, bucket * width_ms + 30);
  }

  /// A window as the script stores it: the little-endian header, then the ring.
  struct Stored {
    std::uint32_t window_ms = 0;
    std::uint32_t buckets = 0;
    double head = 0;
    double oldest = 0;
    std::uint32_t total = 0;
    std::uint32_t fresh = 0;
    std::vector<std::uint32_t> ring;
  };

  Stored stored(const std::string& key) {
    const std::string value = redis.command({"GET", key});
    Stored s;
    constexpr std::size_t kHeader = 32;
    EXPECT_GE(value.size(), kHeader) << "no window under " << key;
    if (value.size() < kHeader) {
      return s;
    }
    const auto read = [&](std::size_t at, auto& field) {
      std::memcpy(&field, value.data() + at, sizeof(field));  // (x86-64: little-endian)
    };
    read(0, s.window_ms);
    read(4, s.buckets);
    read(8, s.head);
    read(16, s.oldest);
    read(24, s.total);
    read(28, s.fresh);
    s.ring.resize((value.size() - kHeader) / 4);
    for (std::size_t i = 0; i < s.ring.size(); ++i) {
      read(kHeader + 4 * i, s.ring[i]);
    }
    return s;
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
  // A fixed-size ring: a 32-byte header (the shape, the newest bucket, the oldest bucket with
  // a count, the running total and the newest bucket's fresh counts) and 4 counters of 4 bytes.
  EXPECT_EQ(redis.command({"STRLEN", "{p:k}"}), "48");
  const Stored s = stored("{p:k}");
  EXPECT_EQ(s.total, 1U);
  EXPECT_EQ(s.oldest, s.head);
  EXPECT_EQ(s.window_ms, 400U);
  EXPECT_EQ(s.buckets, 4U);
}

TEST_F(RedisScriptTest, APartialSlideDropsOnlyTheBucketsThatLeft) {
  // Buckets of 300 ms on Redis' clock; each step starts 30 ms into a bucket (waiting on Redis'
  // clock: time passing is the behaviour under test).
  constexpr std::int64_t kWidth = 300;
  const auto into_bucket = [&](std::int64_t bucket) { return into(bucket, kWidth); };
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
  EXPECT_EQ(stored("{p:s}").total, 2U);
  EXPECT_EQ(stored("{p:s}").oldest, static_cast<double>(first + 2));
  // Inspecting in a later bucket sees the same total and writes nothing.
  ASSERT_TRUE(into_bucket(first + 5));
  EXPECT_EQ(call("{p:s}", 10, 4 * kWidth, 4, /*count=*/false).count, 2);
  EXPECT_EQ(stored("{p:s}").head, static_cast<double>(first + 4));
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
  const double head = stored("{p:k}").head;
  const long long first = std::stoll(redis.command({"PTTL", "{p:k}"}));
  const Result r = call("{p:k}", 5, 600000, 10);
  ASSERT_EQ(r.allowed, 1);
  const long long second = std::stoll(redis.command({"PTTL", "{p:k}"}));
  if (stored("{p:k}").head == head) {  // (not across a 60 s bucket boundary)
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
  EXPECT_EQ(stored("{p:k}").window_ms, 30000U);
  EXPECT_EQ(stored("{p:k}").buckets, 60U);
  EXPECT_EQ(call("{p:k}", 5, 30000, 60).count, 4);
  EXPECT_EQ(call("{p:k}", 5, 30000, 60).count, 5);
  EXPECT_EQ(call("{p:k}", 5, 30000, 60).allowed, 0);
}

TEST_F(RedisScriptTest, CountsInTheNewestBucketAreWrittenInPlaceAndJoinTheRingWhenItMoves) {
  // Buckets of 300 ms on Redis' clock; each step starts 30 ms into a bucket.
  constexpr std::int64_t kWidth = 300;
  const auto into_bucket = [&](std::int64_t bucket) { return into(bucket, kWidth); };
  const std::int64_t first = redis.time_ms() / kWidth + 1;
  ASSERT_TRUE(into_bucket(first));
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(call("{p:f}", 10, 4 * kWidth, 4).count, i);
  }
  // The first count made the window; the next two are the header's fresh counts.
  Stored s = stored("{p:f}");
  EXPECT_EQ(s.total, 3U);
  EXPECT_EQ(s.fresh, 2U);
  EXPECT_EQ(std::accumulate(s.ring.begin(), s.ring.end(), 0U), 1U);
  // A later bucket folds them into their bucket's slot before anything slides.
  ASSERT_TRUE(into_bucket(first + 1));
  EXPECT_EQ(call("{p:f}", 10, 4 * kWidth, 4).count, 4);
  s = stored("{p:f}");
  EXPECT_EQ(s.fresh, 0U);
  EXPECT_EQ(s.total, 4U);
  EXPECT_EQ(s.ring[first % 4], 3U);
  EXPECT_EQ(s.ring[(first + 1) % 4], 1U);
  EXPECT_EQ(s.head, static_cast<double>(first + 1));
  // Once the first bucket leaves, its three counts go with it.
  ASSERT_TRUE(into_bucket(first + 4));
  const Result r = call("{p:f}", 10, 4 * kWidth, 4);
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(stored("{p:f}").oldest, static_cast<double>(first + 1));
}

TEST_F(RedisScriptTest, WhenTheOldestCountLeavesTheNextIsFoundAcrossTheRingsEnd) {
  // 6 buckets of 300 ms; bucket b lives at slot b % 6. Counts in b0, b4 and b5 with b0 % 6 == 3:
  // at b6, b0's count leaves and the next oldest is searched in b1..b4, slots 4, 5, 0, 1, and
  // found at the ring's start (b4, slot 1).
  constexpr std::int64_t kWidth = 300;
  std::int64_t b0 = redis.time_ms() / kWidth + 1;
  b0 += (3 - b0 % 6 + 6) % 6;
  ASSERT_TRUE(into(b0, kWidth));
  EXPECT_EQ(call("{p:w}", 10, 6 * kWidth, 6).count, 1);
  ASSERT_TRUE(into(b0 + 4, kWidth));
  EXPECT_EQ(call("{p:w}", 10, 6 * kWidth, 6).count, 2);
  ASSERT_TRUE(into(b0 + 5, kWidth));
  EXPECT_EQ(call("{p:w}", 10, 6 * kWidth, 6).count, 3);
  ASSERT_TRUE(into(b0 + 6, kWidth));
  const Result r = call("{p:w}", 10, 6 * kWidth, 6);
  EXPECT_EQ(r.count, 3);  // b4, b5 and this one
  EXPECT_EQ(stored("{p:w}").oldest, static_cast<double>(b0 + 4));
  EXPECT_GT(r.reset_ms, 3 * kWidth);  // b4 leaves at (b4 + 6) * width: 4 buckets from b6's start
  EXPECT_LE(r.reset_ms, 4 * kWidth);
  // And in the middle of the ring: at b0 + 10, b4 has left; b5 (slot 2) is next.
  ASSERT_TRUE(into(b0 + 10, kWidth));
  EXPECT_EQ(call("{p:w}", 10, 6 * kWidth, 6).count, 3);
  EXPECT_EQ(stored("{p:w}").oldest, static_cast<double>(b0 + 5));
}

TEST_F(RedisScriptTest, OneCallDecidesItsKeysInOrder) {
  // The same key twice in a call counts twice, as two calls would; other keys stay apart.
  const auto results = call_batch({{"{p:a}", 2},
                                   {"{p:a}", 2},
                                   {"{p:b}", 2},
                                   {"{p:a}", 2},
                                   {"{p:a}", 2, 60000, 10, /*count=*/false},
                                   {"{p:none}", 2, 60000, 10, /*count=*/false}});
  ASSERT_EQ(results.size(), 6U);
  EXPECT_EQ(results[0].allowed, 1);
  EXPECT_EQ(results[0].count, 1);
  EXPECT_EQ(results[1].allowed, 1);
  EXPECT_EQ(results[1].count, 2);
  EXPECT_EQ(results[2].allowed, 1);
  EXPECT_EQ(results[2].count, 1);
  EXPECT_EQ(results[3].allowed, 0);  // the third of `a` is over its limit of 2
  EXPECT_EQ(results[3].count, 2);
  EXPECT_GT(results[3].retry_ms, 0);
  EXPECT_EQ(results[4].count, 2);
  EXPECT_EQ(results[5].count, 0);
  EXPECT_EQ(redis.command({"EXISTS", "{p:none}"}), "0");
  // Keys of different policies in one call: each its own limit and shape.
  const auto mixed = call_batch({{"{q:a}", 1, 1000, 4}, {"{r:a}", 5, 60000, 60}});
  EXPECT_EQ(mixed[0].limit, 1);
  EXPECT_LE(mixed[0].reset_ms, 1000);
  EXPECT_EQ(mixed[1].limit, 5);
  EXPECT_GT(mixed[1].reset_ms, 1000);
  EXPECT_EQ(stored("{r:a}").buckets, 60U);
}

TEST_F(RedisScriptTest, KeysOfOneCallShareAShapeByItsIndex) {
  (void)call("{p:warm-up}", 1, 60000, 10, /*count=*/false);  // loads the script
  // Two shapes for three keys: a and c under shape 0 (limit 1), b under shape 1 (limit 3). A
  // key's code is 2 * its shape + its mode: a counts (1), b counts (3), c is inspected (0).
  const std::vector<std::string> args{"EVALSHA", sliding_window_script().sha1,
                                      "3",       "{p:a}",
                                      "{p:b}",   "{p:c}",
                                      "2",       "1",
                                      "60000",   "10",
                                      "3",       "60000",
                                      "10",      "1",
                                      "3",       "0"};
  const auto fields = [&] {
    std::string text = redis.command(args);
    std::replace(text.begin(), text.end(), ',', ' ');
    std::istringstream in(text);
    std::vector<long long> v;
    for (long long x = 0; in >> x;) {
      v.push_back(x);
    }
    return v;
  };
  std::vector<long long> v = fields();
  ASSERT_EQ(v.size(), 15U);
  EXPECT_EQ(v[0], 1);  // a: admitted under limit 1
  EXPECT_EQ(v[2], 1);
  EXPECT_EQ(v[5], 1);  // b: admitted, count 1 of limit 3
  EXPECT_EQ(v[7], 3);
  EXPECT_EQ(v[11], 0);  // c: inspected, nothing counted
  EXPECT_EQ(v[12], 1);
  v = fields();
  ASSERT_EQ(v.size(), 15U);
  EXPECT_EQ(v[0], 0);  // a: its limit of 1 reached
  EXPECT_EQ(v[6], 2);  // b: count 2
  EXPECT_EQ(v[11], 0);
  EXPECT_EQ(redis.command({"EXISTS", "{p:c}"}), "0");
}

}  // namespace
}  // namespace sluice::store
