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
#include <string>
#include <thread>
#include <vector>

#include "gateway/store/redis_codec.hpp"
#include "gateway/store/redis_scripts.hpp"
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

  /// The requests all replicas pushed for user `key` of policy "p" (its window's running
  /// total in Redis), or -1 before the hash key exists.
  long long pushed_for(const std::string& key) const {
    const auto hash = store::hash_from_hex(redis.command({"GET", "sluice:hash-key"}));
    if (!hash) {
      return -1;
    }
    const std::string total =
        redis.command({"HGET", store::window_key("p", (*hash)(key)) + ":sync", "@t"});
    return total == "(nil)" ? 0 : std::stoll(total);
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
  // Redis holds the windows under hashed keys and replica fields, never the credential.
  const std::string keys = redis.command({"KEYS", "sluice:*"});
  EXPECT_EQ(keys.find("alice"), std::string::npos) << keys;
  const Scrape s = scrape_metrics(a);
  EXPECT_GT(s.sum("sluice_store_sync_seconds_count", {{"store", "redis"}}), 0);
  EXPECT_EQ(s.sum("sluice_store_sync_errors_total", {{"store", "redis"}}), 0);
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

TEST_F(RedisHybridTest, TheSyncScriptCountsOtherReplicasInTheWindowOnly) {
  const auto& script = store::hybrid_sync_script();
  ASSERT_EQ(redis.command({"SCRIPT", "LOAD", std::string(script.source)}), script.sha1);
  // One call: the keys of one policy (so one shape), one delta each, one count back each.
  const auto sync = [&](const std::vector<std::string>& keys, const std::string& replica,
                        const std::vector<int>& deltas, int width_ms, int buckets) {
    std::vector<std::string> command{"EVALSHA", script.sha1, std::to_string(keys.size())};
    command.insert(command.end(), keys.begin(), keys.end());
    command.insert(command.end(), {replica, std::to_string(width_ms), std::to_string(buckets)});
    for (const int delta : deltas) {
      command.push_back(std::to_string(delta));
    }
    return redis.command(command);
  };
  EXPECT_EQ(sync({"{t:a}:sync"}, "r1", {3}, 1000, 10), "0");  // its own count is not "others"
  EXPECT_EQ(sync({"{t:a}:sync"}, "r2", {2}, 1000, 10), "3");
  EXPECT_EQ(sync({"{t:a}:sync"}, "r1", {0}, 1000, 10), "2");
  EXPECT_EQ(sync({"{t:a}:sync", "{t:c}:sync"}, "r3", {0, 6}, 1000, 10), "5,0");
  EXPECT_EQ(sync({"{t:c}:sync", "{t:a}:sync"}, "r1", {0, 0}, 1000, 10), "6,2");
  // The hash expires one window plus one bucket after its last push.
  const long long ttl = std::stoll(redis.command({"PTTL", "{t:a}:sync"}));
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, 11000);
  // A re-tuned policy carries the live totals into the current bucket of the new shape.
  EXPECT_EQ(sync({"{t:a}:sync"}, "r4", {0}, 500, 20), "5");
  // The replica that re-tuned keeps its own total; the others' restart at zero, so until their
  // counts leave, r1 sees its own 3 among the others' (errs toward denying).
  EXPECT_EQ(sync({"{t:a}:sync"}, "r1", {0}, 500, 20), "5");
  // Counts leave with their bucket, and a hash whose counts all left is gone: a 1 ms-wide bucket
  // of a 2-bucket window is out 2 ms after it started.
  EXPECT_EQ(sync({"{t:b}:sync"}, "r4", {4}, 1, 2), "0");
  EXPECT_EQ(sync({"{t:b}:sync"}, "r5", {0}, 1, 2), "4");
  const std::int64_t written = redis.time_ms();
  ASSERT_TRUE(wait_for_redis_clock(redis, written + 5));
  EXPECT_EQ(sync({"{t:b}:sync"}, "r5", {0}, 1, 2), "0");
  EXPECT_EQ(redis.command({"EXISTS", "{t:b}:sync"}), "0");
}

}  // namespace
}  // namespace sluice::testing
