// SPDX-License-Identifier: Apache-2.0
// `store.mode: "hybrid"` with real replicas and a real Redis (docs/distributed.md, "Hybrid
// mode"): decisions are local, the fleet's counts come back with each exchange, the
// over-admission bound holds under paced load on two replicas, on_error applies when an
// exchange fails, and what was admitted during an outage reaches Redis afterwards.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gateway/store/redis_codec.hpp"
#include "tests/support/admin_client.hpp"
#include "tests/support/demo_backend.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/metrics_text.hpp"
#include "tests/support/redis_gateway.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/sluice_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait.hpp"

namespace sluice::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr int kSyncMs = 100;

class RedisHybridTest : public ::testing::Test {
 protected:
  TempDir dir{"sluice-hybrid"};  // where SAVE writes, so a restart can keep what Redis held
  RedisServer redis{{"--dir", dir.path().string()}};
  DemoBackend backend;

  json config(int requests, const char* on_error = "local", int sync_ms = kSyncMs) const {
    json c = redis_gateway_config(backend.endpoint(), redis.port(), requests, on_error);
    c["store"]["mode"] = "hybrid";
    c["store"]["sync_ms"] = sync_ms;
    return c;
  }

  /// The hash of user `key` of policy "p": its fields (bucket starts) and counts, or nullopt
  /// before the hash key exists.
  std::optional<std::map<std::int64_t, long long>> fleet_of(const std::string& key) const {
    const auto hash = store::hash_from_hex(redis.command({"GET", "sluice:hash-key"}));
    if (!hash) {
      return std::nullopt;
    }
    // HGETALL renders as "FIELD,VALUE,FIELD,VALUE..." (empty for no hash).
    const std::string all =
        redis.command({"HGETALL", store::window_key("p", (*hash)(key)) + ":fleet"});
    std::map<std::int64_t, long long> buckets;
    std::stringstream in(all);
    std::string field;
    std::string value;
    while (std::getline(in, field, ',') && std::getline(in, value, ',')) {
      buckets[std::stoll(field)] = std::stoll(value);
    }
    return buckets;
  }
  /// The requests all replicas pushed for user `key` of policy "p" (every bucket of its
  /// hash), or -1 before the hash key exists.
  long long pushed_for(const std::string& key) const {
    const auto buckets = fleet_of(key);
    if (!buckets) {
      return -1;
    }
    long long sum = 0;
    for (const auto& [start, count] : *buckets) {
      sum += count;
    }
    return sum;
  }
  /// HMGET commands Redis has run so far (INFO commandstats).
  long long hmget_calls() const {
    const std::string info = redis.command({"INFO", "commandstats"});
    const std::string field = "cmdstat_hmget:calls=";
    const auto at = info.find(field);
    return at == std::string::npos ? 0 : std::stoll(info.substr(at + field.size()));
  }
  /// Admits one request of `key` through `client` and waits until it is settled: its push is
  /// in Redis (all replicas' pushes for the key make `pushed`) and the pusher has taken in the
  /// replies, which it has once the exchange that carried it has finished (the exchange
  /// histogram counts it then; a replica exchanges only when a decision is queued, so that is
  /// the one).
  ::testing::AssertionResult admit_settled(const SluiceProcess& pusher, HttpClient& client,
                                           const std::string& key, long long pushed) const {
    const auto exchanges = [&pusher] {
      return scrape_metrics(pusher).sum("sluice_store_sync_seconds_count", {{"store", "redis"}});
    };
    const double before = exchanges();
    if (status_for(client, key) != 200U) {
      return ::testing::AssertionFailure() << key << " refused before push " << pushed;
    }
    auto reached = wait_until("the push to reach Redis", [&] { return pushed_for(key) == pushed; });
    if (!reached) {
      return reached;
    }
    return wait_until("the pusher's exchange to finish", [&] { return exchanges() > before; });
  }
  std::string fleet_key_of(const std::string& key) const {
    const auto hash = store::hash_from_hex(redis.command({"GET", "sluice:hash-key"}));
    return hash ? store::window_key("p", (*hash)(key)) + ":fleet" : std::string();
  }
};

TEST_F(RedisHybridTest, TheOtherReplicasCountsComeBackWithTheNextExchange) {
  RedisReplicaPair replicas(config(5));
  SluiceProcess& a = replicas.a;
  HttpClient& ca = replicas.ca;
  HttpClient& cb = replicas.cb;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(status_for(ca, "alice"), 200U);
  }
  EXPECT_EQ(status_for(ca, "alice"), 429U);
  // b has never seen alice: its first decision is blind (docs/distributed.md, the bound), and
  // its next exchange, within sync_ms, brings a's five back.
  (void)status_for(cb, "alice");
  const auto denied = wait_until(
      "replica b to deny alice", [&] { return status_for(cb, "alice") == 429U; }, kDefaultTimeout,
      milliseconds(kSyncMs / 4));
  EXPECT_TRUE(denied) << denied.message();
  // The admin view adds the other replicas' count, read from Redis when asked.
  AdminClient admin(a.admin_port());
  const auto state = admin.get("/admin/limits/p/keys/alice").body;
  EXPECT_GE(state["count"], 5);
  EXPECT_EQ(state["remaining"], 0);
  // Redis holds the windows under hashed keys and bucket fields, never the credential.
  const std::string keys = redis.command({"KEYS", "sluice:*"});
  EXPECT_EQ(keys.find("alice"), std::string::npos) << keys;
  const Scrape s = scrape_metrics(a);
  EXPECT_GT(s.sum("sluice_store_sync_seconds_count", {{"store", "redis"}}), 0);
  EXPECT_EQ(s.sum("sluice_store_sync_errors_total", {{"store", "redis"}}), 0);
}

TEST_F(RedisHybridTest, AReplicasThreadsNeverTakeEachOthersPushesForOtherReplicas) {
  // One replica, two worker threads, several connections (so both threads decide on the same
  // key and push it): what one thread pushed is the replica's own, counted once by its local
  // store, never again as "others". Paced past each exchange, all of the limit is admitted.
  constexpr int kLimit = 20;
  SluiceProcess a(config(kLimit));
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<HttpClient>(a.proxy_port()));
  }
  wait_until_using_redis(a, *clients.front());
  int admitted = 0;
  for (int i = 0; i < kLimit; ++i) {
    admitted += status_for(*clients[static_cast<std::size_t>(i) % clients.size()], "lena") == 200U;
    std::this_thread::sleep_for(milliseconds(kSyncMs * 3 / 4));  // an exchange in between
  }
  EXPECT_EQ(admitted, kLimit);
  // The last admissions reach Redis with the next exchange, however late a loaded machine runs it.
  const auto all_pushed =
      wait_until("every admission pushed", [&] { return pushed_for("lena") >= kLimit; });
  EXPECT_TRUE(all_pushed) << all_pushed.message();
  EXPECT_EQ(pushed_for("lena"), kLimit);  // and never more
  for (auto& client : clients) {
    EXPECT_EQ(status_for(*client, "lena"), 429U);
  }
}

TEST_F(RedisHybridTest, TwoReplicasUnderPacedLoadStayWithinTheStatedBound) {
  // The bound of docs/distributed.md: at most limit + replicas x rate x sync_ms in a window,
  // rate being what each replica receives of the key. Each replica gets one request every
  // 10 ms (about 100/s) for 3 s: 600 offered, 300 each, all inside one 60 s window. Without
  // sharing, two replicas would admit 2 x limit.
  constexpr int kLimit = 100;
  RedisReplicaPair replicas(config(kLimit));
  SluiceProcess& a = replicas.a;
  SluiceProcess& b = replicas.b;
  std::atomic<int> admitted{0};
  std::atomic<int> sent{0};
  const auto started = std::chrono::steady_clock::now();
  const auto until = started + std::chrono::seconds(3);
  std::vector<std::thread> clients;
  for (SluiceProcess* gateway : {&a, &b}) {
    clients.emplace_back([&, port = gateway->proxy_port()] {
      HttpClient client(port);
      auto next = std::chrono::steady_clock::now();
      while (next < until) {
        sent.fetch_add(1);
        const unsigned status = status_for(client, "paced");
        if (status == 200U) {
          admitted.fetch_add(1);
        } else {
          EXPECT_EQ(status, 429U);
        }
        next += milliseconds(10);
        std::this_thread::sleep_until(next);
      }
    });
  }
  for (auto& t : clients) {
    t.join();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double rate = sent.load() / 2.0 / seconds;  // per replica
  const double bound = kLimit + 2 * rate * kSyncMs / 1000.0;
  EXPECT_GE(admitted.load(), kLimit);
  EXPECT_LE(admitted.load(), bound) << "rate per replica " << rate << "/s over " << seconds << " s";
  std::cout << "[ bound    ] admitted " << admitted.load() << " of " << sent.load() << ", limit "
            << kLimit << ", bound " << bound << "\n";
  EXPECT_LT(admitted.load(), 2 * kLimit);
}

TEST_F(RedisHybridTest, AFailedExchangePutsOnErrorInForceUntilOneSucceeds) {
  SluiceProcess a(config(1000, "deny"));
  HttpClient client(a.proxy_port());
  wait_until_using_redis(a, client);
  EXPECT_EQ(status_for(client, "ivan"), 200U);
  redis.stop();
  // Decisions stay local until an exchange fails (within sync_ms / 2 of a decision), then
  // on_error "deny" answers 503.
  const auto denied = wait_until(
      "on_error deny to be in force", [&] { return status_for(client, "ivan") == 503U; },
      kDefaultTimeout, milliseconds(10));
  ASSERT_TRUE(denied) << denied.message();
  EXPECT_TRUE(a.process().wait_for_line("redis store unavailable: on_error=deny in force"));
  Scrape s = scrape_metrics(a);
  EXPECT_GT(s.sum("sluice_store_sync_errors_total", {{"store", "redis"}}), 0);
  EXPECT_EQ(s.value("sluice_store_fallback_active", {{"store", "redis"}}), 1);
  redis.start();
  wait_until_using_redis(a, client);
  EXPECT_TRUE(a.process().wait_for_line("redis store answering again"));
  EXPECT_EQ(status_for(client, "ivan"), 200U);
}

TEST_F(RedisHybridTest, WhatAReplicaAdmitsDuringAnOutageReachesRedisAfterwards) {
  SluiceProcess a(config(1000, "local"));
  HttpClient client(a.proxy_port());
  wait_until_using_redis(a, client);
  EXPECT_EQ(status_for(client, "judy"), 200U);
  const auto first =
      wait_until("judy's first request to reach Redis", [&] { return pushed_for("judy") == 1; });
  ASSERT_TRUE(first) << first.message();
  // Redis goes away with what it held saved (its hash key, judy's window), as after a crash of
  // a persistent Redis.
  ASSERT_EQ(redis.command({"SAVE"}), "OK");
  redis.stop();
  // on_error "local": decided in process at the full limit, and kept in the journal.
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(status_for(client, "judy"), 200U);
  }
  redis.start();
  // No request is needed: the journal retries every exchange until the seven are in.
  const auto pushed =
      wait_until("the outage's admissions to reach Redis", [&] { return pushed_for("judy") == 8; });
  EXPECT_TRUE(pushed) << pushed.message() << " pushed " << pushed_for("judy");
  wait_until_using_redis(a, client);
  EXPECT_EQ(pushed_for("judy"), 8);  // and once only
}

TEST_F(RedisHybridTest, APushIntoTheOnlyUnsettledBucketReadsTheFleetCountFromItsReply) {
  // 4 s buckets (a 240 s window of 60); with timeout_ms 100 a bucket settles 200 ms after it
  // ends. Once a replica has exchanged a key after that point of the current bucket, its next
  // push there is the only command the key needs: HINCRBY answers the fleet's count in the
  // bucket (docs/distributed.md, "Hybrid mode"), so no HMGET follows it.
  constexpr int kLimit = 7;
  constexpr std::int64_t kWidth = 4000;
  RedisReplicaPair replicas([&] {
    json c = redis_gateway_config(backend.endpoint(), redis.port(), kLimit, "local", 240000, 60);
    c["store"]["mode"] = "hybrid";
    c["store"]["sync_ms"] = kSyncMs;
    return c;
  }());
  // Start 300 ms into a bucket: everything below happens in it, well before it ends.
  const std::int64_t now = redis.time_ms();
  const std::int64_t start = now - now % kWidth + (now % kWidth > 1000 ? kWidth : 0);
  ASSERT_TRUE(wait_for_redis_clock(redis, start + 300));
  const auto admit = [&](const SluiceProcess& pusher, HttpClient& client, long long pushed) {
    return admit_settled(pusher, client, "ivy", pushed);
  };
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(admit(replicas.a, replicas.ca, i));
  }
  ASSERT_TRUE(admit(replicas.b, replicas.cb, 4));  // b's first exchange of ivy reads the hash
  const long long hmget_before = hmget_calls();
  ASSERT_TRUE(admit(replicas.a, replicas.ca, 5));  // a: 4 of its own, 1 of b's known
  ASSERT_TRUE(admit(replicas.b, replicas.cb, 6));  // b: its HINCRBY answers 6 = 2 own + 4
  EXPECT_EQ(hmget_calls(), hmget_before);
  ASSERT_LT(redis.time_ms(), start + kWidth) << "the steps above left the bucket; rerun";
  // b knows a's 4 from that reply alone: one more for ivy and the limit of 7 is reached.
  EXPECT_EQ(status_for(replicas.cb, "ivy"), 200U);
  EXPECT_EQ(status_for(replicas.cb, "ivy"), 429U);
}

TEST_F(RedisHybridTest, AClosedBucketIsReadUntilItIsHeldAndOnceMoreWhenItSettles) {
  // 8 s buckets; with timeout_ms 2000 a bucket settles 4 s after it ends, and sync_ms after its
  // end it is held once read (docs/distributed.md, "Hybrid mode"). From 300 ms into a bucket,
  // the one before is held by the first exchange, and later ones read no bucket but the current
  // one (HINCRBY's reply), until the one before settles: then one HMGET reads it again, and a
  // push that landed in it late (from an exchange slower than sync_ms; the test plays that
  // replica) counts.
  // (Spans this long leave room for a sanitizer build's slower steps.)
  constexpr int kLimit = 10;
  constexpr std::int64_t kWidth = 8000;
  constexpr std::int64_t kSettles = 4000;  // after the bucket's end
  json c = redis_gateway_config(backend.endpoint(), redis.port(), kLimit, "local", 480000, 60);
  c["store"]["mode"] = "hybrid";
  c["store"]["sync_ms"] = kSyncMs;
  c["store"]["timeout_ms"] = kSettles / 2;
  SluiceProcess a(c);
  HttpClient client(a.proxy_port());
  wait_until_using_redis(a, client);
  const std::int64_t now = redis.time_ms();
  const std::int64_t start = now - now % kWidth + (now % kWidth > 1000 ? kWidth : 0);
  ASSERT_TRUE(wait_for_redis_clock(redis, start + 300));
  ASSERT_TRUE(admit_settled(a, client, "hal", 1));  // the first exchange reads the hash whole
  const long long hmget_before = hmget_calls();
  ASSERT_TRUE(admit_settled(a, client, "hal", 2));
  ASSERT_TRUE(admit_settled(a, client, "hal", 3));
  EXPECT_EQ(hmget_calls(), hmget_before);  // the bucket before is held, not read again
  // The late push into the bucket before: unseen while it is held.
  ASSERT_EQ(redis.command({"HINCRBY", fleet_key_of("hal"), std::to_string(start - kWidth), "5"}),
            "5");
  ASSERT_TRUE(admit_settled(a, client, "hal", 9));
  EXPECT_EQ(hmget_calls(), hmget_before);
  ASSERT_LT(redis.time_ms(), start + kSettles) << "the steps above reached the settling; rerun";
  // Settled: the next exchange reads it once more, and the five count from then on.
  ASSERT_TRUE(wait_for_redis_clock(redis, start + kSettles + 50));
  ASSERT_TRUE(admit_settled(a, client, "hal", 10));
  EXPECT_EQ(hmget_calls(), hmget_before + 1);
  // 5 of a's own and 5 of the late push: the limit of 10 is reached.
  EXPECT_EQ(status_for(client, "hal"), 429U);
  ASSERT_LT(redis.time_ms(), start + kWidth) << "the steps above left the bucket; rerun";
}

TEST_F(RedisHybridTest, TheFleetHashHoldsACountPerBucketOnRedisClockAndDropsTheOnesThatLeft) {
  // A 2 s window of four 500 ms buckets (docs/distributed.md, "Hybrid mode": the layout).
  json c = redis_gateway_config(backend.endpoint(), redis.port(), 100, "local", 2000, 4);
  c["store"]["mode"] = "hybrid";
  c["store"]["sync_ms"] = kSyncMs;
  SluiceProcess a(c);
  HttpClient client(a.proxy_port());
  wait_until_using_redis(a, client);
  const std::int64_t before = redis.time_ms();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(status_for(client, "kate"), 200U);
  }
  const auto pushed =
      wait_until("kate's requests to reach Redis", [&] { return pushed_for("kate") == 3; });
  ASSERT_TRUE(pushed) << pushed.message() << " pushed " << pushed_for("kate");
  const auto first = fleet_of("kate");
  ASSERT_TRUE(first);
  for (const auto& [start, count] : *first) {
    EXPECT_EQ(start % 500, 0) << start;  // a bucket's start on Redis' clock
    EXPECT_GE(start, before - before % 500);
    EXPECT_LE(start, redis.time_ms());
  }
  // A TTL of two windows and a bucket, set at the first push.
  const long long ttl = std::stoll(redis.command({"PTTL", fleet_key_of("kate")}));
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, 2 * 2000 + 500);
  // Once the window has passed, the next exchange deletes the buckets that left it, and the
  // hash holds the new request alone.
  const std::int64_t last = first->rbegin()->first;
  ASSERT_TRUE(wait_for_redis_clock(redis, last + 2000 + 10));
  EXPECT_EQ(status_for(client, "kate"), 200U);
  const auto dropped = wait_until("the old buckets to be deleted", [&] {
    const auto now = fleet_of("kate");
    return now && now->size() == 1 && now->begin()->first > last && now->begin()->second == 1;
  });
  EXPECT_TRUE(dropped) << dropped.message();
}

}  // namespace
}  // namespace sluice::testing
