// SPDX-License-Identifier: Apache-2.0
// The hard cap on tracked keys (`store.max_keys`) and what eviction may and may not forget.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "gateway/store/memory_store.hpp"
#include "tests/support/manual_clock.hpp"

namespace sluice::store {
namespace {

using namespace std::chrono_literals;

limiter::Policy make_policy(std::string name, std::uint32_t requests) {
  limiter::Policy p;
  p.name = std::move(name);
  p.requests = requests;
  p.window = 1000ms;
  p.buckets = 10;
  return p;
}

// A fixed hash key makes the table layout, and so every sampled eviction, reproducible.
core::KeyedHash fixed_hash() {
  core::KeyedHash::Key key{};
  key.fill(7);
  return core::KeyedHash(key);
}

std::string user(int i) {
  return "user-" + std::to_string(i);
}

TEST(MemoryStoreEvictionTest, CapHoldsWithTenTimesMoreKeys) {
  testing::ManualClock clock;
  MemoryStore store(clock, {.max_keys = 1000, .shards = 0}, fixed_hash());
  const PolicyId id = store.apply(make_policy("standard", 5));
  ASSERT_GT(store.shard_count(), 1U) << "exercise the per-shard split of the cap";
  std::size_t peak_memory = 0;
  for (int i = 0; i < 10000; ++i) {
    store.decide_now(id, user(i));
    if (i % 100 == 0) {
      clock.advance(10ms);
    }
    ASSERT_LE(store.tracked_keys(id), 1000U) << "after key " << i;
    peak_memory = std::max(peak_memory, store.stats().memory_bytes);
  }
  const auto stats = store.stats();
  EXPECT_EQ(stats.tracked_keys, store.tracked_keys(id));
  EXPECT_EQ(stats.evicted_idle + stats.evicted_active, 10000U - stats.tracked_keys);
  EXPECT_GT(stats.evicted_active, 0U) << "all keys were active: the sketch had to take some";
  // Memory is bounded by the cap, whatever the number of distinct keys: the tables (at most
  // 1.25 slots per key of 8 + 56 bytes, plus one spare slot per shard) and the sketches.
  const std::size_t tables = (std::size_t{1000} * 5 / 4 + 16) * 64 + store.shard_count() * 8 * 64;
  const std::size_t sketches = (std::size_t{1000} + store.shard_count() * 16) * 56;
  EXPECT_LE(peak_memory, tables + sketches + std::size_t{64} * 1024);
}

// The cost of never over-admitting: keys that share a sketch ring with an evicted key start
// with its counts. At 20% overflow that must stay rare.
TEST(MemoryStoreEvictionTest, ModestOverflowRarelyLimitsNewKeysEarly) {
  testing::ManualClock clock;
  MemoryStore store(clock, {.max_keys = 1000, .shards = 0}, fixed_hash());
  const PolicyId id = store.apply(make_policy("standard", 5));
  for (int i = 0; i < 1200; ++i) {
    store.decide_now(id, user(i));
    store.decide_now(id, user(i));
  }
  int admitted = 0;
  for (int i = 0; i < 1000; ++i) {
    admitted += store.decide_now(id, "fresh-" + std::to_string(i)).allowed ? 1 : 0;
  }
  EXPECT_GE(admitted, 990) << "a key is limited early only if its ring holds 5 counts";
}

TEST(MemoryStoreEvictionTest, EvictsIdleKeysBeforeActiveOnes) {
  testing::ManualClock clock;
  MemoryStore store(clock, {.max_keys = 100, .shards = 1}, fixed_hash());
  const PolicyId id = store.apply(make_policy("standard", 5));
  for (int i = 0; i < 50; ++i) {
    store.decide_now(id, "idle-" + std::to_string(i));
  }
  clock.advance(1000ms);  // a whole window later: those 50 are idle
  for (int i = 0; i < 50; ++i) {
    store.decide_now(id, "active-" + std::to_string(i));
    store.decide_now(id, "active-" + std::to_string(i));
  }
  for (int i = 0; i < 50; ++i) {
    store.decide_now(id, "new-" + std::to_string(i));
  }
  const auto stats = store.stats();
  EXPECT_EQ(stats.evicted_idle, 50U);
  EXPECT_EQ(stats.evicted_active, 0U);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(store.inspect_now(id, "active-" + std::to_string(i)).count, 2U) << i;
  }
}

TEST(MemoryStoreEvictionTest, AnEvictedActiveKeyDoesNotComeBackToAFreshAllowance) {
  testing::ManualClock clock;
  MemoryStore store(clock, {.max_keys = 10, .shards = 1}, fixed_hash());
  const PolicyId id = store.apply(make_policy("standard", 5));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store.decide_now(id, "heavy").allowed);
  }
  clock.advance(100ms);  // later bucket: "heavy" is now the least recently active key
  for (int i = 0; i < 10; ++i) {
    store.decide_now(id, user(i));  // the 10th new key evicts "heavy"
  }
  ASSERT_EQ(store.stats().evicted_active, 1U);
  EXPECT_EQ(store.inspect_now(id, "heavy").count, 5U) << "the sketch remembers";
  EXPECT_FALSE(store.decide_now(id, "heavy").allowed) << "no fresh allowance after eviction";
  clock.advance(900ms);  // its five requests leave the window
  EXPECT_TRUE(store.decide_now(id, "heavy").allowed);
}

TEST(MemoryStoreEvictionTest, AKeyEvictedWithManyBucketsComesBackWithEachOfThem) {
  // "heavy" is counted in 8 of 10 buckets (more than fit inline: its ring is a block); the
  // sketch must give back every bucket, so its allowance returns one bucket at a time.
  testing::ManualClock clock;
  MemoryStore store(clock, {.max_keys = 10, .shards = 1}, fixed_hash());
  const PolicyId id = store.apply(make_policy("standard", 8));
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(store.decide_now(id, "heavy").allowed);
    clock.advance(100ms);
  }
  for (int i = 0; i < 10; ++i) {
    store.decide_now(id, user(i));  // the 10th new key evicts "heavy"
  }
  ASSERT_EQ(store.stats().evicted_active, 1U);
  EXPECT_EQ(store.inspect_now(id, "heavy").count, 8U) << "the sketch remembers";
  EXPECT_FALSE(store.decide_now(id, "heavy").allowed);
  clock.advance(200ms);  // the first bucket leaves: exactly one request fits again
  EXPECT_TRUE(store.decide_now(id, "heavy").allowed);
  EXPECT_FALSE(store.decide_now(id, "heavy").allowed);
}

TEST(MemoryStoreEvictionTest, TheSketchCostsFortyBytesPerRing) {
  testing::ManualClock clock;
  MemoryStore store(clock, {.max_keys = 1000, .shards = 1}, fixed_hash());
  limiter::Policy wide = make_policy("wide", 5);
  wide.window = 3600000ms;
  wide.buckets = 3600;
  const PolicyId id = store.apply(wide);
  for (int i = 0; i < 1000; ++i) {
    store.decide_now(id, user(i));
  }
  const std::size_t before = store.stats().memory_bytes;
  clock.advance(1s);
  store.decide_now(id, "one more");  // evicts an active key: the sketch appears
  ASSERT_EQ(store.stats().evicted_active, 1U);
  EXPECT_EQ(store.stats().memory_bytes, before + 1000 * 40);
}

TEST(MemoryStoreEvictionTest, PoliciesShareTheCap) {
  testing::ManualClock clock;
  MemoryStore store(clock, {.max_keys = 100, .shards = 1}, fixed_hash());
  const PolicyId a = store.apply(make_policy("a", 5));
  const PolicyId b = store.apply(make_policy("b", 5));
  for (int i = 0; i < 100; ++i) {
    store.decide_now(a, user(i));
  }
  clock.advance(100ms);
  for (int i = 0; i < 20; ++i) {
    store.decide_now(b, user(i));
  }
  EXPECT_EQ(store.tracked_keys(a) + store.tracked_keys(b), 100U);
  EXPECT_EQ(store.tracked_keys(b), 20U);
  EXPECT_EQ(store.stats().evicted_active, 20U);
}

TEST(MemoryStoreEvictionTest, ReshapeKeepsWhatTheSketchRemembers) {
  testing::ManualClock clock;
  MemoryStore store(clock, {.max_keys = 4, .shards = 1}, fixed_hash());
  PolicyId id = store.apply(make_policy("standard", 3));
  for (int i = 0; i < 3; ++i) {
    store.decide_now(id, "heavy");
  }
  clock.advance(100ms);
  for (int i = 0; i < 4; ++i) {
    store.decide_now(id, user(i));
  }
  ASSERT_EQ(store.stats().evicted_active, 1U);
  auto reshaped = make_policy("standard", 3);
  reshaped.buckets = 4;
  id = store.apply(reshaped);
  EXPECT_FALSE(store.decide_now(id, "heavy").allowed);
}

}  // namespace
}  // namespace sluice::store
