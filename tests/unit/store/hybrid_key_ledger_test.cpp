// SPDX-License-Identifier: Apache-2.0
// What a hybrid replica has pushed, per key and bucket: the part of the fleet's count that is
// its own, when it sets a TTL, and what it forgets (docs/distributed.md, "Hybrid mode").
#include "gateway/store/hybrid_key_ledger.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

namespace sluice::store {
namespace {

constexpr JournalKey kCarol{0, 0x1100000000000011ULL};
constexpr JournalKey kDave{0, 0x2200000000000022ULL};
constexpr JournalKey kCarolOther{1, 0x1100000000000011ULL};

// 1 s buckets in a 10 s window; a bucket settles 2 s after its end (a command timeout of 1 s)
// and is held once read 100 ms after its end (sync_ms).
constexpr HybridShape kSecondBuckets{1000, 10};
std::int64_t settled_at(std::int64_t now) {
  return kSecondBuckets.bucket_start(now - 2000);
}
std::int64_t held_at(std::int64_t now) {
  return kSecondBuckets.bucket_start(now - 100);
}
/// A whole read of carol's buckets (kSecondBuckets) that came back from `now`.
std::uint64_t read_whole_at(HybridKeyLedger& ledger, const std::vector<FleetBucket>& buckets,
                            std::int64_t now) {
  return ledger.absorb_whole(kCarol, kSecondBuckets, buckets, kSecondBuckets.live_from(now),
                             settled_at(now), held_at(now));
}

TEST(HybridKeyLedgerTest, OwnRequestsCountInTheBucketsStillLive) {
  HybridKeyLedger own;
  own.add(kCarol, 1000, 3, 0);
  own.add(kCarol, 2000, 2, 0);
  own.add(kCarol, 2000, 1, 0);
  own.add(kDave, 2000, 7, 0);
  EXPECT_EQ(own.live(kCarol, 0), 6U);
  EXPECT_EQ(own.live(kCarol, 2000), 3U);  // the bucket at 1000 left
  EXPECT_EQ(own.live(kCarol, 3000), 0U);
  EXPECT_EQ(own.live(kCarolOther, 0), 0U);  // another policy's window
  EXPECT_EQ(own.live(kDave, 0), 7U);
}

TEST(HybridKeyLedgerTest, ATtlIsSetOnceAWindowPerKey) {
  HybridKeyLedger own;
  EXPECT_TRUE(own.needs_expiry(kCarol, 10'000, 1000));
  own.expiry_set(kCarol, 10'000);
  EXPECT_FALSE(own.needs_expiry(kCarol, 10'500, 1000));
  EXPECT_FALSE(own.needs_expiry(kCarol, 11'000, 1000));
  EXPECT_TRUE(own.needs_expiry(kCarol, 11'001, 1000));
  EXPECT_TRUE(own.needs_expiry(kDave, 10'500, 1000));
}

TEST(HybridKeyLedgerTest, ForgettingDropsOldBucketsAndKeysLeftWithNothing) {
  HybridKeyLedger own;
  own.add(kCarol, 1000, 1, 0);
  own.add(kCarol, 5000, 1, 0);
  own.add(kDave, 1000, 1, 0);
  own.expiry_set(kDave, 1000);
  ASSERT_EQ(own.size(), 2U);
  std::size_t forgotten = 0;
  for (std::size_t shard = 0; shard < HybridKeyLedger::kShards; ++shard) {
    forgotten += own.forget(shard, 2000);
  }
  EXPECT_EQ(forgotten, 1U);  // bob; alice keeps her bucket at 5000
  EXPECT_EQ(own.live(kCarol, 0), 1U);
  EXPECT_EQ(own.live(kDave, 0), 0U);
  EXPECT_TRUE(own.needs_expiry(kDave, 1500, 1000));
}

TEST(HybridKeyLedgerTest, SettledBucketsAreReadOnceAndThenOnlyTheOnesThatCanStillChange) {
  HybridKeyLedger ledger;
  const HybridShape shape{1000, 10};  // 1 s buckets, a 10 s window
  // Nothing known: the whole hash.
  EXPECT_TRUE(ledger.plan_read(kCarol, shape, 20'000, 8).whole);
  // A whole read at 20 s: buckets before 19 s are settled (a command timeout has passed).
  const std::uint64_t whole = ledger.absorb_whole(
      kCarol, shape, {{12'000, 1}, {18'000, 2}, {19'000, 3}, {20'000, 4}}, 11'000, 19'000);
  EXPECT_EQ(whole, 10U);
  // The next exchange, two buckets later, reads from 19 s to 22 s by name.
  const auto plan = ledger.plan_read(kCarol, shape, 22'000, 8);
  ASSERT_FALSE(plan.whole);
  EXPECT_EQ(plan.from, 19'000);
  EXPECT_EQ(plan.fields, 4U);
  // At 22 s the window starts at 13 s: the bucket at 12 s left (a field to delete with the
  // next ones that leave), the ones at 18 s (kept) and 19-22 s (read) count.
  std::vector<std::int64_t> dead;
  const std::uint64_t part = ledger.absorb_part(
      kCarol, shape, plan, std::vector<std::uint64_t>{3, 5, 0, 1}, 13'000, 21'000, dead);
  EXPECT_EQ(part, 2U + 3 + 5 + 0 + 1);
  EXPECT_TRUE(dead.empty());
  // 19 s and 20 s are settled now: the next read starts at 21 s.
  const auto next = ledger.plan_read(kCarol, shape, 23'000, 8);
  ASSERT_FALSE(next.whole);
  EXPECT_EQ(next.from, 21'000);
  EXPECT_EQ(next.fields, 3U);
}

TEST(HybridKeyLedgerTest, HeldBucketsAreNotReadAgainUntilOneSettles) {
  HybridKeyLedger ledger;
  const HybridShape shape = kSecondBuckets;
  // A whole read at 20.5 s: 17 s and before are settled, 18 s and 19 s held.
  EXPECT_EQ(read_whole_at(ledger, {{17'000, 1}, {18'000, 2}, {19'000, 3}, {20'000, 4}}, 20'500),
            10U);
  // At 20.7 s only the current bucket is read (a push's HINCRBY answers it).
  std::vector<std::int64_t> dead;
  auto plan = ledger.plan_read(kCarol, shape, 20'000, 8, settled_at(20'700));
  ASSERT_FALSE(plan.whole);
  EXPECT_EQ(plan.from, 20'000);
  EXPECT_EQ(plan.fields, 1U);
  EXPECT_EQ(ledger.absorb_part(kCarol, shape, plan, std::vector<std::uint64_t>{5}, 11'000,
                               settled_at(20'700), dead, held_at(20'700)),
            1U + 2 + 3 + 5);
  // Without the settling mark the read starts at the first bucket not settled, as before holds.
  EXPECT_EQ(ledger.plan_read(kCarol, shape, 20'000, 8).from, 18'000);
  // At 21.05 s the bucket at 18 s has settled: the read starts there again, and what landed
  // meanwhile in a held bucket (19 s: 3 -> 4) counts from now on.
  plan = ledger.plan_read(kCarol, shape, 21'000, 8, settled_at(21'050));
  ASSERT_FALSE(plan.whole);
  EXPECT_EQ(plan.from, 18'000);
  EXPECT_EQ(plan.fields, 4U);
  EXPECT_EQ(ledger.absorb_part(kCarol, shape, plan, std::vector<std::uint64_t>{2, 4, 5, 1}, 12'000,
                               settled_at(21'050), dead, held_at(21'050)),
            1U + 2 + 4 + 5 + 1);
  // At 21.3 s the bucket at 20 s, closed 300 ms ago, is read and held; at 21.6 s none is.
  plan = ledger.plan_read(kCarol, shape, 21'000, 8, settled_at(21'300));
  EXPECT_EQ(plan.from, 20'000);
  EXPECT_EQ(plan.fields, 2U);
  EXPECT_EQ(ledger.absorb_part(kCarol, shape, plan, std::vector<std::uint64_t>{6, 2}, 12'000,
                               settled_at(21'300), dead, held_at(21'300)),
            1U + 2 + 4 + 6 + 2);
  plan = ledger.plan_read(kCarol, shape, 21'000, 8, settled_at(21'600));
  EXPECT_EQ(plan.from, 21'000);
  EXPECT_EQ(plan.fields, 1U);
  // A read planned before (from 20 s) that lands after keeps the larger counts: the fleet's
  // counts only grow, so an older reply never lowers a held bucket.
  EXPECT_EQ(ledger.absorb_part(kCarol, shape, {.whole = false, .from = 20'000, .fields = 2},
                               std::vector<std::uint64_t>{5, 3}, 12'000, settled_at(21'300), dead,
                               held_at(21'300)),
            1U + 2 + 4 + 5 + 3);
  EXPECT_EQ(ledger.absorb_part(kCarol, shape, plan, std::vector<std::uint64_t>{3}, 12'000,
                               settled_at(21'600), dead, held_at(21'600)),
            1U + 2 + 4 + 6 + 3);
  EXPECT_TRUE(dead.empty());
}

TEST(HybridKeyLedgerTest, AWholeReadThatLandsLateMovesNothingBack) {
  // Two threads read a key whole for the first time; the read planned later (at 21.5 s) lands
  // first, the one planned at 20.5 s after it with older counts and marks.
  HybridKeyLedger ledger;
  const HybridShape shape = kSecondBuckets;
  EXPECT_EQ(read_whole_at(ledger, {{18'000, 2}, {19'000, 3}, {20'000, 4}, {21'000, 1}}, 21'500),
            10U);
  // The late one answers with what it read, the kept counts where they are larger.
  EXPECT_EQ(read_whole_at(ledger, {{18'000, 2}, {19'000, 2}, {20'000, 1}}, 20'500), 2U + 3 + 4);
  // At 21.7 s nothing before the current bucket is read again (19 s settled, 20 s held), and
  // the held buckets keep the newer, larger counts.
  const auto plan = ledger.plan_read(kCarol, shape, 21'000, 8, settled_at(21'700));
  ASSERT_FALSE(plan.whole);
  EXPECT_EQ(plan.from, 21'000);
  EXPECT_EQ(plan.fields, 1U);
  std::vector<std::int64_t> dead;
  EXPECT_EQ(ledger.absorb_part(kCarol, shape, plan, std::vector<std::uint64_t>{2},
                               shape.live_from(21'700), settled_at(21'700), dead, held_at(21'700)),
            2U + 3 + 4 + 2);
  // A whole read under another bucket width (a re-tune) replaces what was known.
  const HybridShape halves{500, 20};
  EXPECT_EQ(
      ledger.absorb_whole(kCarol, halves, {{21'000, 1}, {21'500, 1}}, halves.live_from(21'800),
                          halves.bucket_start(19'800), halves.bucket_start(21'700)),
      2U);
  EXPECT_EQ(ledger.plan_read(kCarol, halves, 21'500, 8, halves.bucket_start(19'900)).from, 21'500);
}

TEST(HybridKeyLedgerTest, BucketsThatLeftTheWindowAreDeletedSeveralAtATime) {
  HybridKeyLedger ledger;
  const HybridShape shape{1000, 10};  // 1 s buckets, a 10 s window
  (void)ledger.absorb_whole(kCarol, shape,
                            {{11'000, 1}, {12'000, 1}, {13'000, 1}, {14'000, 1}, {20'000, 1}},
                            11'000, 20'000);
  // Each second one more bucket leaves the window; it counts for nothing at once, and the
  // fields go to HDEL together once kDeadPerDelete of them are known.
  std::vector<std::int64_t> dead;
  std::uint64_t live = 0;
  for (std::int64_t now = 22'000; now <= 25'000 && dead.empty(); now += 1000) {
    const auto plan = ledger.plan_read(kCarol, shape, now, 8);
    ASSERT_FALSE(plan.whole);
    std::vector<std::uint64_t> counts(plan.fields, 0);
    if (plan.from == 20'000) {
      counts[0] = 1;  // the bucket at 20 s, read until it settles
    }
    live = ledger.absorb_part(kCarol, shape, plan, counts, shape.live_from(now), now - 1000, dead);
    // The live buckets from 13 s on at 22 s (13, 14 and 20 s), one fewer each second.
    EXPECT_EQ(live, 1 + static_cast<std::uint64_t>((24'000 - now) / 1000)) << now;
  }
  static_assert(HybridKeyLedger::kDeadPerDelete == 4);
  EXPECT_EQ(dead, (std::vector<std::int64_t>{11'000, 12'000, 13'000, 14'000}));
  EXPECT_EQ(live, 1U);  // the bucket at 20 s
}

TEST(HybridKeyLedgerTest, ForgettingKeepsTheDeadBucketsOfAKeyThatIsStillExchanged) {
  // A key exchanged every 8 s in a 10 s window: between two exchanges the replica's periodic
  // forgetting passes over it, and the buckets that left meanwhile must still be deleted at
  // the next exchange, or the key's hash gains fields that nobody deletes while it is pushed.
  HybridKeyLedger ledger;
  const HybridShape shape{1000, 10};
  (void)ledger.absorb_whole(kCarol, shape,
                            {{12'000, 1}, {13'000, 1}, {14'000, 1}, {15'000, 1}, {19'000, 1}},
                            11'000, 19'000);
  ledger.add(kCarol, 20'000, 1, shape.live_from(20'000));
  ledger.expiry_set(kCarol, 20'000);
  for (std::size_t shard = 0; shard < HybridKeyLedger::kShards; ++shard) {
    (void)ledger.forget(shard, 26'000 - 10'000);  // at 26 s, keeping a window
  }
  const auto plan = ledger.plan_read(kCarol, shape, 28'000, 16);
  ASSERT_FALSE(plan.whole);
  std::vector<std::int64_t> dead;
  const std::vector<std::uint64_t> counts(plan.fields, 0);
  (void)ledger.absorb_part(kCarol, shape, plan, counts, shape.live_from(28'000), 27'000, dead);
  EXPECT_EQ(dead, (std::vector<std::int64_t>{12'000, 13'000, 14'000, 15'000}));
}

TEST(HybridKeyLedgerTest, TheWholeHashIsReadAgainAfterAGapARetuneOrTooManyBuckets) {
  HybridKeyLedger ledger;
  const HybridShape shape{1000, 10};
  (void)ledger.absorb_whole(kCarol, shape, {{19'000, 1}}, 11'000, 19'000);
  EXPECT_FALSE(ledger.plan_read(kCarol, shape, 26'000, 8).whole);  // 8 buckets by name
  EXPECT_TRUE(ledger.plan_read(kCarol, shape, 27'000, 8).whole);   // 9: cheaper whole
  EXPECT_TRUE(ledger.plan_read(kCarol, shape, 40'000, 64).whole);  // the known part left
  EXPECT_TRUE(ledger.plan_read(kCarol, HybridShape{500, 20}, 20'000, 8).whole);  // re-tuned
  EXPECT_TRUE(ledger.plan_read(kDave, shape, 20'000, 8).whole);                  // never read
}

TEST(HybridKeyLedgerTest, OwnAndSettledCountsMatchASimpleTallyWhateverTheOrder) {
  // The ledger keeps a key's buckets sorted with running totals; a plain map of bucket to
  // count, summed anew every time, is the reference. Pushes come out of order (two threads'
  // exchanges settle in any order), a whole read lists its buckets in the hash's order, and
  // part reads, forgetting and dead buckets trim both ends.
  HybridKeyLedger ledger;
  const HybridShape shape{1000, 10};
  std::map<std::int64_t, std::uint64_t> own;      // bucket start -> this replica's pushes
  std::map<std::int64_t, std::uint64_t> settled;  // bucket start -> the fleet's settled count
  const auto sum_from = [](const std::map<std::int64_t, std::uint64_t>& m, std::int64_t from) {
    std::uint64_t sum = 0;
    for (auto it = m.lower_bound(from); it != m.end(); ++it) {
      sum += it->second;
    }
    return sum;
  };
  std::uint32_t seed = 12345;
  const auto next = [&seed](std::uint32_t bound) {
    seed = seed * 1103515245U + 12345U;
    return (seed >> 16U) % bound;
  };
  // A whole read at 20'000: buckets listed newest first, as a hash may.
  std::vector<FleetBucket> whole;
  for (std::int64_t start = 20'000; start >= 11'000; start -= 1000) {
    whole.push_back({start, static_cast<std::uint64_t>(start / 1000)});
  }
  const std::uint64_t fleet = ledger.absorb_whole(kCarol, shape, whole, 11'000, 18'000);
  EXPECT_EQ(fleet, 155U);  // 11 + 12 + ... + 20
  for (std::int64_t start = 11'000; start < 18'000; start += 1000) {
    settled[start] = static_cast<std::uint64_t>(start / 1000);
  }
  std::size_t dead_seen = 0;
  for (std::int64_t now = 20'000; now < 60'000; now += 1000) {
    const std::int64_t live_from = shape.live_from(now);
    // A few pushes into this bucket and the two before it, in any order.
    for (int i = 0; i < 3; ++i) {
      const std::int64_t bucket = now - static_cast<std::int64_t>(next(3)) * 1000;
      const std::uint32_t count = 1 + next(5);
      ledger.add(kCarol, bucket, count, live_from);
      for (auto it = own.begin(); it != own.end() && it->first < live_from;) {
        it = own.erase(it);
      }
      own[bucket] += count;
      ASSERT_EQ(ledger.live(kCarol, live_from), sum_from(own, live_from)) << "at " << now;
      ASSERT_EQ(ledger.live(kCarol, now), sum_from(own, now)) << "at " << now;
    }
    // A part read of what is not settled yet, as planned.
    const HybridKeyLedger::ReadPlan plan = ledger.plan_read(kCarol, shape, now, 8);
    ASSERT_FALSE(plan.whole) << "at " << now;
    std::vector<std::uint64_t> counts;
    std::uint64_t expected = 0;
    for (std::size_t f = 0; f < plan.fields; ++f) {
      const std::int64_t start = plan.from + static_cast<std::int64_t>(f) * 1000;
      counts.push_back(next(4));  // some buckets are empty
      if (start >= live_from) {
        expected += counts.back();
        if (start < now - 2000 && counts.back() > 0) {
          settled.emplace(start, counts.back());
        }
      }
    }
    for (auto it = settled.lower_bound(live_from); it != settled.end() && it->first < plan.from;
         ++it) {
      expected += it->second;
    }
    std::vector<std::int64_t> dead;
    EXPECT_EQ(ledger.absorb_part(kCarol, shape, plan, counts, live_from, now - 2000, dead),
              expected)
        << "at " << now;
    for (const std::int64_t start : dead) {
      EXPECT_LT(start, live_from);
      EXPECT_EQ(settled.erase(start), 1U) << start;  // each known once, dropped once
    }
    dead_seen += dead.size();
    if (now % 3000 == 0) {
      // Another thread's read, planned before this one settled its buckets, lands after it:
      // the buckets it reads are now known, and count once, as read.
      std::vector<std::int64_t> more_dead;
      EXPECT_EQ(ledger.absorb_part(kCarol, shape, plan, counts, live_from, now - 2000, more_dead),
                expected)
          << "at " << now;
      EXPECT_TRUE(more_dead.empty());
    }
    if (now % 10'000 == 0) {
      for (std::size_t shard = 0; shard < HybridKeyLedger::kShards; ++shard) {
        (void)ledger.forget(shard, live_from);
      }
      for (auto it = own.begin(); it != own.end() && it->first < live_from;) {
        it = own.erase(it);
      }
      ASSERT_EQ(ledger.live(kCarol, 0), sum_from(own, 0)) << "at " << now;
    }
  }
  EXPECT_GT(dead_seen, 20U);
}

TEST(HybridKeyLedgerTest, PlanningAndSettlingAnExchangeAgreeWithTheSingleLookUps) {
  // One ledger goes through plan_exchange and settle, the other through the look-ups they
  // merge: every plan, count and dead bucket must match, exchange after exchange.
  HybridKeyLedger merged;
  HybridKeyLedger single;
  const HybridShape shape{1000, 10};
  struct Step {
    std::int64_t now;
    std::uint32_t pushed;      // requests acknowledged (0: no push)
    bool ttl_acknowledged;     // the PEXPIRE, when one was sent
    bool read_ok;              // the read came back
    std::uint64_t per_bucket;  // what each read bucket holds
  };
  const std::vector<Step> steps{
      {20'100, 2, true, true, 3},  {20'600, 1, true, true, 1},  {21'200, 0, true, true, 2},
      {22'300, 4, false, true, 1}, {23'400, 1, true, false, 0}, {24'500, 3, true, true, 5},
      {31'000, 1, true, true, 1},  {33'000, 2, true, true, 2},  {35'000, 1, true, true, 0},
  };
  std::size_t dead_seen = 0;
  std::size_t parts = 0;
  for (const Step& step : steps) {
    SCOPED_TRACE(step.now);
    const std::int64_t bucket = shape.bucket_start(step.now);
    const std::int64_t live_from = shape.live_from(step.now);
    const std::int64_t settled_before = shape.bucket_start(step.now - 2000);
    const std::int64_t held_before = shape.bucket_start(step.now - 100);
    const bool pushing = step.pushed > 0;
    const auto plan =
        merged.plan_exchange(kCarol, shape, bucket, step.now, pushing, 8, settled_before);
    const bool expiry = pushing && single.needs_expiry(kCarol, step.now, shape.window_ms());
    const auto read = single.plan_read(kCarol, shape, bucket, 8, settled_before);
    EXPECT_EQ(plan.set_expiry, expiry);
    EXPECT_EQ(plan.read.whole, read.whole);
    EXPECT_EQ(plan.read.from, read.from);
    EXPECT_EQ(plan.read.fields, read.fields);

    HybridKeyLedger::Answer answer;
    answer.bucket = bucket;
    answer.pushed = step.pushed;
    answer.live_from = live_from;
    answer.settled_before = settled_before;
    answer.held_before = held_before;
    answer.plan = plan.read;
    if (expiry && step.ttl_acknowledged) {
      answer.expiry_set_at = step.now;
      single.expiry_set(kCarol, step.now);
    }
    single.add(kCarol, bucket, step.pushed, live_from);
    std::vector<FleetBucket> whole;
    std::vector<std::uint64_t> counts;
    std::vector<std::int64_t> dead_merged;
    std::vector<std::int64_t> dead_single;
    std::optional<std::uint64_t> fleet;
    if (step.read_ok && read.whole) {
      for (std::int64_t b = live_from; b <= bucket; b += shape.width_ms) {
        whole.push_back({b, step.per_bucket});
      }
      answer.whole = &whole;
      fleet = single.absorb_whole(kCarol, shape, whole, live_from, settled_before, held_before);
    } else if (step.read_ok) {
      counts.assign(read.fields, step.per_bucket);
      answer.part = std::span<const std::uint64_t>(counts);
      fleet = single.absorb_part(kCarol, shape, read, counts, live_from, settled_before,
                                 dead_single, held_before);
    }
    const HybridKeyLedger::Settled settled = merged.settle(kCarol, shape, answer, dead_merged);
    EXPECT_EQ(settled.fleet, fleet);
    EXPECT_EQ(settled.own, single.live(kCarol, live_from));
    EXPECT_EQ(dead_merged, dead_single);
    dead_seen += dead_merged.size();
    parts += !plan.read.whole && step.read_ok ? 1 : 0;
  }
  EXPECT_GT(dead_seen, 0U);  // the run reached the deletion of dead buckets
  EXPECT_GT(parts, 3U);      // and read by name most of the time
  // An answer with nothing acknowledged and nothing read notes nothing.
  std::vector<std::int64_t> dead;
  const auto nothing = merged.settle(kDave, shape, HybridKeyLedger::Answer{}, dead);
  EXPECT_FALSE(nothing.fleet.has_value());
  EXPECT_EQ(merged.size(), 1U);
}

}  // namespace
}  // namespace sluice::store
