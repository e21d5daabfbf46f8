// SPDX-License-Identifier: Apache-2.0
// The per-thread journal of `store.mode: "hybrid"`: what is pushed, in which order, what a
// failure puts back, and what is forgotten.
#include "gateway/store/hybrid_journal.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace sluice::store {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr JournalKey kAlice{0, 11};
constexpr JournalKey kBob{0, 22};
constexpr JournalKey kAliceOther{1, 11};  // the same user under another policy

core::TimePoint at(int ms) {
  return core::TimePoint{} + milliseconds(ms);
}

/// The next batch, which must hold one key: its delta.
std::uint32_t delta_of_next_batch(HybridJournal& journal) {
  const auto batch = journal.take_batch(10);
  EXPECT_EQ(batch.size(), 1U);
  return batch.empty() ? 0xFFFFFFFFU : batch[0].delta;
}

/// Takes the next batch and checks it holds `expected` (key and delta), in order.
std::vector<SyncItem> expect_batch(HybridJournal& journal, const std::vector<SyncItem>& expected) {
  auto batch = journal.take_batch(10);
  EXPECT_EQ(batch.size(), expected.size());
  for (std::size_t i = 0; i < std::min(batch.size(), expected.size()); ++i) {
    EXPECT_EQ(batch[i].key, expected[i].key) << i;
    EXPECT_EQ(batch[i].delta, expected[i].delta) << i;
  }
  return batch;
}

TEST(HybridJournalTest, AdmittedRequestsArePushedOncePerKeyInFirstSeenOrder) {
  HybridJournal journal;
  journal.note(kBob, 1, at(0));
  journal.note(kAlice, 1, at(1));
  journal.note(kBob, 1, at(2));
  journal.note(kAliceOther, 0, at(3));  // a denial: queued for a fresh count, nothing to push
  EXPECT_EQ(journal.queued(), 3U);
  const auto batch = expect_batch(journal, {{kBob, 2}, {kAlice, 1}, {kAliceOther, 0}});
  EXPECT_EQ(journal.queued(), 0U);
  EXPECT_EQ(journal.unpushed(), 3U);  // in flight until Redis answers
  for (const auto& item : batch) {
    journal.complete(item, 5);
  }
  EXPECT_EQ(journal.unpushed(), 0U);
  EXPECT_EQ(journal.others(kBob), 5U);
  EXPECT_EQ(journal.others(JournalKey{7, 7}), 0U);  // never seen: nothing known
}

TEST(HybridJournalTest, ADecisionReadsTheOthersAndAddsWhatItAdmittedWithOneLookUp) {
  HybridJournal journal;
  HybridJournal::Decision first = journal.decide(kAlice, at(0));
  EXPECT_EQ(first.others(), 0U);  // never synced
  first.admit(1);
  const auto batch = journal.take_batch(10);
  ASSERT_EQ(batch.size(), 1U);
  journal.complete(batch[0], 7);
  HybridJournal::Decision next = journal.decide(kAlice, at(10));
  EXPECT_EQ(next.others(), 7U);  // what the sync returned
  next.admit(2);
  HybridJournal::Decision denied = journal.decide(kBob, at(11));
  denied.admit(0);  // queued all the same, for a fresh count
  EXPECT_EQ(journal.queued(), 2U);
  EXPECT_EQ(journal.unpushed(), 2U);
  (void)expect_batch(journal, {{kAlice, 2}, {kBob, 0}});
}

TEST(HybridJournalTest, ACappedBatchLeavesTheRestFirstInLineForTheNext) {
  HybridJournal journal;
  for (std::uint64_t k = 1; k <= 5; ++k) {
    journal.note({0, k}, 1, at(0));
  }
  const auto first = journal.take_batch(2);
  ASSERT_EQ(first.size(), 2U);
  journal.note({0, 9}, 1, at(1));  // newer than the three left over
  const auto second = journal.take_batch(3);
  ASSERT_EQ(second.size(), 3U);
  EXPECT_EQ(second[0].key.hash, 3U);
  EXPECT_EQ(second[2].key.hash, 5U);
  EXPECT_EQ(journal.take_batch(3).at(0).key.hash, 9U);
}

TEST(HybridJournalTest, AKeyInFlightWaitsAndKeepsWhatItAdmittedMeanwhile) {
  HybridJournal journal;
  journal.note(kAlice, 1, at(0));
  const auto first = journal.take_batch(10);
  journal.note(kAlice, 1, at(1));
  journal.note(kAlice, 1, at(2));
  EXPECT_TRUE(journal.take_batch(10).empty());  // one push per key at a time
  journal.complete(first.at(0), 4);
  EXPECT_EQ(delta_of_next_batch(journal), 2U);
}

TEST(HybridJournalTest, APushRedisCannotHaveRunIsSentAgainAndATimedOutOneIsNot) {
  HybridJournal journal;
  journal.note(kAlice, 1, at(0));
  journal.note(kAlice, 1, at(0));
  journal.complete(journal.take_batch(10).at(0), std::nullopt, /*resend=*/true);
  EXPECT_EQ(journal.others(kAlice), 0U);
  auto again = journal.take_batch(10);
  ASSERT_EQ(again.size(), 1U);
  EXPECT_EQ(again[0].delta, 2U);
  // A timeout: Redis may still run it, so the delta is not sent twice; the key stays queued to
  // learn the others' count.
  journal.complete(again[0], std::nullopt, /*resend=*/false);
  EXPECT_EQ(delta_of_next_batch(journal), 0U);
}

TEST(HybridJournalTest, KeysIdleLongerThanKeepForAreForgottenUnlessSomethingIsOwed) {
  HybridJournal journal;
  journal.note(kAlice, 1, at(0));
  journal.note(kBob, 1, at(0));
  const auto batch = journal.take_batch(1);  // alice in flight, bob still queued
  EXPECT_EQ(journal.forget_idle(at(0) + seconds(61), seconds(60)), 0U);
  journal.complete(batch.at(0), 3);
  EXPECT_EQ(journal.forget_idle(at(0) + seconds(30), seconds(60)), 0U);  // recent
  EXPECT_EQ(journal.forget_idle(at(0) + seconds(61), seconds(60)), 1U);  // alice
  EXPECT_EQ(journal.others(kAlice), 0U);
  EXPECT_EQ(journal.size(), 1U);  // bob: queued, its request not pushed yet
}

}  // namespace
}  // namespace sluice::store
