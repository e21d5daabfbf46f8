// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/memory_store.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/support/manual_clock.hpp"

namespace sluice::store {
namespace {

using namespace std::chrono_literals;

limiter::Policy make_policy(std::string name, std::uint32_t requests,
                            std::chrono::milliseconds window, std::uint32_t buckets) {
  limiter::Policy p;
  p.name = std::move(name);
  p.requests = requests;
  p.window = window;
  p.buckets = buckets;
  return p;
}

class MemoryStoreTest : public ::testing::Test {
 protected:
  testing::ManualClock clock_;
  MemoryStore store_{clock_, MemoryStore::Options{.max_keys = 10000, .shards = 0}};
  // 5 requests per second in 10 buckets of 100 ms.
  PolicyId standard_ = store_.apply(make_policy("standard", 5, 1000ms, 10));

  int admitted(PolicyId id, const std::string& key, int attempts) {
    int n = 0;
    for (int i = 0; i < attempts; ++i) {
      n += store_.decide_now(id, key).allowed ? 1 : 0;
    }
    return n;
  }
};

TEST_F(MemoryStoreTest, AdmitsTheLimitPerKeyThenDenies) {
  EXPECT_EQ(admitted(standard_, "alice", 8), 5);
  const auto d = store_.decide_now(standard_, "alice");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.limit, 5U);
  EXPECT_EQ(d.retry_after, 1000ms);
}

TEST_F(MemoryStoreTest, CountsUsersApart) {
  EXPECT_EQ(admitted(standard_, "alice", 5), 5);
  EXPECT_EQ(admitted(standard_, "bob", 5), 5) << "bob has his own window";
  EXPECT_EQ(store_.tracked_keys(standard_), 2U);
}

TEST_F(MemoryStoreTest, CountsPoliciesApartForTheSameKey) {
  const PolicyId login = store_.apply(make_policy("login", 2, 1000ms, 10));
  EXPECT_EQ(admitted(standard_, "alice", 5), 5);
  EXPECT_EQ(admitted(login, "alice", 5), 2);
}

TEST_F(MemoryStoreTest, RequestsHeldElsewhereTakeTheirPartOfTheLimitFirst) {
  // Hybrid mode: 3 of alice's 5 are counted by other replicas.
  const auto first = store_.decide_now(standard_, "alice", 3);
  EXPECT_TRUE(first.allowed);
  EXPECT_EQ(first.limit, 5U);  // the whole limit is reported
  EXPECT_EQ(first.remaining, 1U);
  EXPECT_TRUE(store_.decide_now(standard_, "alice", 3).allowed);
  const auto denied = store_.decide_now(standard_, "alice", 3);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.limit, 5U);
  EXPECT_EQ(denied.remaining, 0U);
  EXPECT_FALSE(store_.decide_now(standard_, "bob", 5).allowed);  // all held elsewhere
  EXPECT_FALSE(store_.decide_now(standard_, "bob", 9).allowed);  // more than the limit
  EXPECT_EQ(admitted(standard_, "alice", 5), 3) << "alice's own two are still counted";
}

TEST_F(MemoryStoreTest, WindowSlides) {
  EXPECT_EQ(admitted(standard_, "alice", 3), 3);
  clock_.advance(500ms);
  EXPECT_EQ(admitted(standard_, "alice", 5), 2);
  clock_.advance(500ms);  // the first 3 leave
  EXPECT_EQ(admitted(standard_, "alice", 5), 3);
}

TEST_F(MemoryStoreTest, OverridesChangeOneKeysLimitAndZeroBlocks) {
  auto p = make_policy("standard", 5, 1000ms, 10);
  p.overrides = {{"partner-42", 50}, {"abuser", 0}};
  EXPECT_EQ(store_.apply(p), standard_) << "updating keeps the id";
  EXPECT_EQ(admitted(standard_, "partner-42", 60), 50);
  EXPECT_EQ(admitted(standard_, "abuser", 3), 0);
  EXPECT_EQ(admitted(standard_, "someone", 9), 5);
  EXPECT_EQ(store_.decide_now(standard_, "partner-42").limit, 50U);
}

TEST_F(MemoryStoreTest, ANewLimitAppliesToTheNextDecisionAndKeepsCounts) {
  EXPECT_EQ(admitted(standard_, "alice", 4), 4);
  store_.apply(make_policy("standard", 10, 1000ms, 10));
  EXPECT_EQ(admitted(standard_, "alice", 10), 6) << "4 already counted of the new 10";
  store_.apply(make_policy("standard", 3, 1000ms, 10));
  const auto d = store_.decide_now(standard_, "alice");
  EXPECT_FALSE(d.allowed) << "lowered below the count: denied at once";
  EXPECT_EQ(d.remaining, 0U);
}

TEST_F(MemoryStoreTest, ChangingBucketsCarriesCountsIntoTheNewCurrentBucket) {
  EXPECT_EQ(admitted(standard_, "alice", 4), 4);
  clock_.advance(900ms);  // the 4 would leave in 100 ms under the old shape
  store_.apply(make_policy("standard", 5, 1000ms, 4));
  EXPECT_EQ(store_.inspect_now(standard_, "alice").count, 4U);
  clock_.advance(100ms);
  EXPECT_EQ(admitted(standard_, "alice", 5), 1)
      << "the carried 4 now sit in the new current bucket and stay a whole new window";
  // The carried 4 sit in the new bucket [750 ms, 1000 ms) and leave at 1750 ms; the one
  // admitted at 1000 ms stays.
  clock_.advance(750ms - 1ns);
  EXPECT_EQ(admitted(standard_, "alice", 5), 0);
  clock_.advance(1ns);
  EXPECT_EQ(admitted(standard_, "alice", 5), 4);
}

TEST_F(MemoryStoreTest, ChangingTheWindowCarriesCountsToo) {
  EXPECT_EQ(admitted(standard_, "alice", 5), 5);
  store_.apply(make_policy("standard", 5, 3000ms, 3));
  EXPECT_EQ(admitted(standard_, "alice", 1), 0);
  clock_.advance(2999ms);
  EXPECT_EQ(admitted(standard_, "alice", 1), 0);
  clock_.advance(1ms);
  EXPECT_EQ(admitted(standard_, "alice", 5), 5);
}

TEST_F(MemoryStoreTest, InspectMatchesTheStateAndCountsNothing) {
  EXPECT_EQ(admitted(standard_, "alice", 3), 3);
  clock_.advance(250ms);
  const auto s = store_.inspect_now(standard_, "alice");
  EXPECT_EQ(s.count, 3U);
  EXPECT_EQ(s.limit, 5U);
  EXPECT_EQ(s.remaining, 2U);
  EXPECT_EQ(s.reset, 750ms);
  EXPECT_EQ(store_.inspect_now(standard_, "alice").count, 3U);
  const auto unknown = store_.inspect_now(standard_, "nobody");
  EXPECT_EQ(unknown.count, 0U);
  EXPECT_EQ(unknown.remaining, 5U);
  EXPECT_EQ(store_.tracked_keys(standard_), 1U) << "inspecting does not track a key";
}

TEST_F(MemoryStoreTest, RemovedPolicyAdmitsAndComesBackUnderItsOldId) {
  EXPECT_EQ(admitted(standard_, "alice", 5), 5);
  EXPECT_TRUE(store_.remove("standard"));
  EXPECT_FALSE(store_.remove("standard"));
  EXPECT_FALSE(store_.find("standard").has_value());
  EXPECT_TRUE(store_.decide_now(standard_, "alice").allowed);
  EXPECT_EQ(store_.tracked_keys(standard_), 0U);
  const PolicyId again = store_.apply(make_policy("standard", 5, 1000ms, 10));
  EXPECT_EQ(again, standard_);
  EXPECT_EQ(admitted(again, "alice", 9), 5) << "the counts went with the removed policy";
}

TEST_F(MemoryStoreTest, FindsPoliciesByName) {
  EXPECT_EQ(store_.find("standard"), standard_);
  EXPECT_FALSE(store_.find("missing").has_value());
}

TEST_F(MemoryStoreTest, SweepForgetsOnlyIdleKeys) {
  admitted(standard_, "old", 1);
  clock_.advance(600ms);
  admitted(standard_, "recent", 1);
  clock_.advance(400ms);  // "old" has left the window, "recent" has not
  EXPECT_EQ(store_.sweep_idle(), 1U);
  EXPECT_EQ(store_.tracked_keys(standard_), 1U);
  EXPECT_EQ(store_.inspect_now(standard_, "recent").count, 1U);
}

TEST_F(MemoryStoreTest, ReportsTrackedKeysAndMemory) {
  for (int i = 0; i < 100; ++i) {
    admitted(standard_, "user-" + std::to_string(i), 1);
  }
  const auto stats = store_.stats();
  EXPECT_EQ(stats.tracked_keys, 100U);
  EXPECT_GT(stats.memory_bytes, 100U * 56);
  EXPECT_EQ(stats.evicted_idle + stats.evicted_active, 0U);
}

TEST_F(MemoryStoreTest, KeyMemoryDoesNotGrowWithTheBucketCount) {
  // docs/architecture.md "Sparse key state": a key with requests in a few buckets costs the
  // same at 10 or 3600 buckets; only keys with many counted buckets hold more.
  MemoryStore wide(clock_, MemoryStore::Options{.max_keys = 10000, .shards = 1});
  MemoryStore narrow(clock_, MemoryStore::Options{.max_keys = 10000, .shards = 1});
  const PolicyId w = wide.apply(make_policy("wide", 100, 3600000ms, 3600));
  const PolicyId n = narrow.apply(make_policy("narrow", 100, 10000ms, 10));
  for (int i = 0; i < 1000; ++i) {
    wide.decide_now(w, "user-" + std::to_string(i));
    narrow.decide_now(n, "user-" + std::to_string(i));
  }
  EXPECT_EQ(wide.stats().memory_bytes, narrow.stats().memory_bytes);
  // One key busy in 20 buckets moves its pairs to a list of 32 (4 bytes each, and a header).
  for (int second = 0; second < 20; ++second) {
    wide.decide_now(w, "busy");
    clock_.advance(1s);
  }
  const std::size_t before = narrow.stats().memory_bytes;
  EXPECT_EQ(wide.stats().memory_bytes, before + limiter::SparseCountRing::list_bytes_for(32));
  EXPECT_EQ(wide.inspect_now(w, "busy").count, 20U);
}

TEST(MemoryStoreOptionsTest, RejectsImpossibleOptions) {
  testing::ManualClock clock;
  EXPECT_THROW(MemoryStore(clock, {.max_keys = 0, .shards = 0}), std::invalid_argument);
  EXPECT_THROW(MemoryStore(clock, {.max_keys = 100, .shards = 3}), std::invalid_argument);
  MemoryStore small(clock, {.max_keys = 3, .shards = 64});
  EXPECT_EQ(small.shard_count(), 2U) << "no shard may have a share of zero keys";
  MemoryStore big(clock, {.max_keys = 1'000'000, .shards = 0});
  EXPECT_EQ(big.shard_count(), 128U);
}

}  // namespace
}  // namespace sluice::store
