// SPDX-License-Identifier: Apache-2.0
// The per-thread journal of `store.mode: "hybrid"`: what is pushed, in which order, what a
// failure puts back, and what is forgotten.
#include "gateway/store/hybrid_journal.hpp"

#include <gtest/gtest.h>

#include <chrono>

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

TEST(HybridJournalTest, AdmittedRequestsArePushedOncePerKeyInFirstSeenOrder) {
  HybridJournal journal;
  journal.note(kBob, 1, at(0));
  journal.note(kAlice, 1, at(1));
  journal.note(kBob, 1, at(2));
  journal.note(kAliceOther, 0, at(3));  // a denial: queued for a fresh count, nothing to push
  EXPECT_EQ(journal.queued(), 3U);
  const auto batch = journal.take_batch(10);
  ASSERT_EQ(batch.size(), 3U);
  EXPECT_EQ(batch[0].key, kBob);
  EXPECT_EQ(batch[0].delta, 2U);
  EXPECT_EQ(batch[1].key, kAlice);
  EXPECT_EQ(batch[1].delta, 1U);
  EXPECT_EQ(batch[2].key, kAliceOther);
  EXPECT_EQ(batch[2].delta, 0U);
  EXPECT_EQ(journal.queued(), 0U);
  EXPECT_EQ(journal.unpushed(), 3U);  // in flight until Redis answers
  for (const auto& item : batch) {
    journal.complete(item, 5);
  }
  EXPECT_EQ(journal.unpushed(), 0U);
  EXPECT_EQ(journal.others(kBob), 5U);
  EXPECT_EQ(journal.others(JournalKey{7, 7}), 0U);  // never seen: nothing known
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
