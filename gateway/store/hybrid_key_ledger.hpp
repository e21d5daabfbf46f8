// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <boost/unordered/unordered_flat_map.hpp>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "gateway/store/hybrid_fleet_count.hpp"
#include "gateway/store/hybrid_journal.hpp"

namespace sluice::store {

/// What one hybrid replica knows of each key beyond its threads' journals (docs/distributed.md,
/// "Hybrid mode"):
/// - what it pushed, per bucket: Redis keeps only the fleet's count per bucket, and the others'
///   count is that less what this replica pushed into the same live buckets;
/// - the fleet's settled buckets: a bucket nobody can push into any more (its end is two
///   command timeouts past) never changes, so the next exchange reads only the buckets after
///   them, not the whole hash;
/// - the fleet's held buckets: ones read once their end was `sync_ms` past (a push into them
///   lands later only from an exchange slower than that), kept until they settle, when one more
///   read makes them final; until then an exchange reads only the buckets after them.
/// Shared by the replica's threads (any of them may push or read a key; all of them decide on
/// the one local store), so it is sharded under mutexes; it is looked up twice per key per
/// exchange (plan_exchange, settle), never per request.
class HybridKeyLedger {
 public:
  /// `count` requests of `key` went into the bucket starting at `bucket_start` (Redis acknowledged
  /// them). Buckets before `live_from` are dropped on the way.
  void add(const JournalKey& key, std::int64_t bucket_start, std::uint32_t count,
           std::int64_t live_from);
  /// This replica's requests of `key` in buckets starting at or after `live_from`.
  [[nodiscard]] std::uint64_t live(const JournalKey& key, std::int64_t live_from);
  /// Whether a push of `key` at `now_ms` should set the hash's TTL: this replica has not set it
  /// in the last `window_ms` (kExpiryWindows windows and a bucket long, it outlasts every push
  /// until then by a window and a bucket).
  [[nodiscard]] bool needs_expiry(const JournalKey& key, std::int64_t now_ms,
                                  std::int64_t window_ms);
  /// Redis acknowledged the TTL this replica set on `key`'s hash at `at_ms`.
  void expiry_set(const JournalKey& key, std::int64_t at_ms);
  /// The TTL a push sets, in windows (plus a bucket).
  static constexpr std::int64_t kExpiryWindows = 2;

  /// How an exchange at `bucket` reads `key`'s hash: the `fields` buckets from `from` on
  /// (HMGET) when the known ones before `from` are under the same bucket width and still in the
  /// window, and there are at most `max_fields` of them; else the whole hash. `from` is the first
  /// bucket not settled when a held one has settled since it was read (buckets starting before
  /// `settled_before` have: this read makes them final), else the first one not held.
  struct ReadPlan {
    bool whole = true;
    std::int64_t from = 0;
    std::size_t fields = 0;
  };
  /// The default `settled_before` reads every bucket not settled, held or not.
  static constexpr std::int64_t kReadUnsettled = std::numeric_limits<std::int64_t>::max();
  [[nodiscard]] ReadPlan plan_read(const JournalKey& key, const HybridShape& shape,
                                   std::int64_t bucket, std::size_t max_fields,
                                   std::int64_t settled_before = kReadUnsettled);
  /// The default `held_before` holds nothing: only settled buckets are kept.
  static constexpr std::int64_t kHoldNone = std::numeric_limits<std::int64_t>::min();
  /// A whole read of `key` (its buckets from `live_from` on): the ones starting before
  /// `settled_before` are kept as settled, those before `held_before` as held. Under another
  /// bucket width they replace what was known; under the same one they join it, the marks only
  /// move on and a count read again keeps the larger (a read planned later may have landed
  /// first). Returns the fleet's live count.
  std::uint64_t absorb_whole(const JournalKey& key, const HybridShape& shape,
                             const std::vector<FleetBucket>& live, std::int64_t live_from,
                             std::int64_t settled_before, std::int64_t held_before = kHoldNone);
  /// A read of the buckets from `plan.from` on, one count each: with the known buckets before
  /// it, the fleet's live count at `live_from`; the ones starting before `settled_before` are
  /// kept as settled, those before `held_before` as held (a count read again keeps the larger:
  /// the fleet's counts only grow). Known buckets that left the window go to `dead` (fields to
  /// delete) once there are kDeadPerDelete of them; until then they are kept and count for
  /// nothing.
  std::uint64_t absorb_part(const JournalKey& key, const HybridShape& shape, const ReadPlan& plan,
                            std::span<const std::uint64_t> counts, std::int64_t live_from,
                            std::int64_t settled_before, std::vector<std::int64_t>& dead,
                            std::int64_t held_before = kHoldNone);
  /// What an exchange in the bucket starting at `bucket`, at `now_ms`, does for `key`, with one
  /// look-up: whether its push sets the TTL (only when `pushing`; see needs_expiry, with the
  /// shape's window) and how it reads the hash (plan_read, with `settled_before`).
  struct ExchangePlan {
    bool set_expiry = false;
    ReadPlan read;
  };
  [[nodiscard]] ExchangePlan plan_exchange(const JournalKey& key, const HybridShape& shape,
                                           std::int64_t bucket, std::int64_t now_ms, bool pushing,
                                           std::size_t max_fields, std::int64_t settled_before);
  /// What Redis answered for one key's exchange (see settle()).
  struct Answer {
    std::int64_t bucket = 0;                    ///< the bucket pushed into
    std::uint32_t pushed = 0;                   ///< requests Redis acknowledged in it (0: none)
    std::int64_t live_from = 0;                 ///< the oldest live bucket's start
    std::int64_t settled_before = 0;            ///< buckets starting before it can change no more
    std::int64_t held_before = kHoldNone;       ///< ones before it are held (see the class)
    std::optional<std::int64_t> expiry_set_at;  ///< Redis acknowledged the TTL set then
    const std::vector<FleetBucket>* whole = nullptr;     ///< a whole read's live buckets
    std::optional<std::span<const std::uint64_t>> part;  ///< a part read's counts, per `plan`
    ReadPlan plan;
  };
  /// The fleet's live count (nullopt when the answer holds no read) and this replica's own.
  struct Settled {
    std::optional<std::uint64_t> fleet;
    std::uint64_t own = 0;
  };
  /// One key's exchange came back, with one look-up: the TTL and the push Redis acknowledged
  /// are noted (expiry_set, add), the read absorbed (absorb_whole or absorb_part, `dead` as
  /// there), and the counts returned, this replica's own as live() would give it.
  Settled settle(const JournalKey& key, const HybridShape& shape, const Answer& answer,
                 std::vector<std::int64_t>& dead);

  /// Drops this replica's pushes of one shard (of kShards, taken in turn by the caller) that
  /// start before `older_than`, and keys whose pushes, settled buckets and TTL all predate it;
  /// returns how many keys were dropped.
  std::size_t forget(std::size_t shard, std::int64_t older_than);

  static constexpr std::size_t kShards = 16;
  /// Dead buckets handed out for deletion together (absorb_part): a key's hash holds at most
  /// this many fields beyond its live buckets.
  static constexpr std::size_t kDeadPerDelete = 4;
  [[nodiscard]] std::size_t size();

 private:
  /// Buckets with a count, ascending by start, and their total: a key's pushes or its known
  /// (settled and held) buckets. Old buckets leave at the front and new ones come at the back, so
  /// an exchange walks the few buckets at either end, not the window's (docs/benchmarks.md,
  /// 2026-12-02).
  class Counts {
   public:
    [[nodiscard]] bool empty() const noexcept { return buckets_.empty(); }
    /// Adds `count` to the bucket starting at `start`.
    void add(std::int64_t start, std::uint32_t count);
    /// Notes `count` for the bucket starting at `start` unless a larger one is known already.
    void raise(std::int64_t start, std::uint32_t count);
    /// The counts of the buckets starting in [from, until).
    [[nodiscard]] std::uint64_t sum_between(std::int64_t from, std::int64_t until) const;
    /// The counts of the buckets starting at or after `from`.
    [[nodiscard]] std::uint64_t sum_from(std::int64_t from) const;
    /// How many buckets start before `until`.
    [[nodiscard]] std::size_t count_before(std::int64_t until) const;
    /// Whether every bucket starts before `until`.
    [[nodiscard]] bool all_before(std::int64_t until) const noexcept {
      return buckets_.empty() || buckets_.back().start < until;
    }
    /// Drops the buckets starting before `until`, their starts appended to `dropped` if given.
    void drop_before(std::int64_t until, std::vector<std::int64_t>* dropped = nullptr);
    void clear() noexcept;

   private:
    struct Bucket {
      std::int64_t start = 0;
      std::uint32_t count = 0;
    };
    /// The first bucket starting at or after `start` (the newest is checked first: new buckets
    /// come last).
    [[nodiscard]] std::vector<Bucket>::iterator at_or_after(std::int64_t start);
    /// The counts of the first buckets, those starting before `until`.
    [[nodiscard]] std::uint64_t sum_before(std::int64_t until) const;
    /// The counts of the last buckets, those starting at or after `from`.
    [[nodiscard]] std::uint64_t sum_since(std::int64_t from) const;

    std::vector<Bucket> buckets_;
    std::uint64_t total_ = 0;
  };
  struct KeyHash {
    std::size_t operator()(const JournalKey& k) const noexcept {
      return static_cast<std::size_t>(k.hash ^ (std::uint64_t{k.policy} * 0x9E3779B97F4A7C15ULL));
    }
  };
  struct Entry {
    Counts pushes;
    std::int64_t expiry_set = std::numeric_limits<std::int64_t>::min();  ///< when, Redis' clock
    Counts known;                    ///< the fleet's settled and held buckets with a count
    std::int64_t settled_until = 0;  ///< buckets starting before it are settled, all in `known`
    std::int64_t held_until = 0;     ///< and those from settled_until to it are held there
    std::int64_t settled_width = 0;  ///< their width (0: nothing known)
  };
  struct Shard {
    std::mutex mutex;
    boost::unordered_flat_map<JournalKey, Entry, KeyHash> keys;
  };
  // What the look-ups above do to one key's entry, under its shard's mutex.
  static void add_to(Entry& entry, std::int64_t bucket_start, std::uint32_t count,
                     std::int64_t live_from);
  [[nodiscard]] static std::uint64_t live_in(const Entry& entry, std::int64_t live_from);
  [[nodiscard]] static ReadPlan plan_for(const Entry& entry, const HybridShape& shape,
                                         std::int64_t bucket, std::size_t max_fields,
                                         std::int64_t settled_before);
  static std::uint64_t absorb_whole_into(Entry& entry, const HybridShape& shape,
                                         const std::vector<FleetBucket>& live,
                                         std::int64_t live_from, std::int64_t settled_before,
                                         std::int64_t held_before);
  static std::uint64_t absorb_part_into(Entry& entry, const HybridShape& shape,
                                        const ReadPlan& plan, std::span<const std::uint64_t> counts,
                                        std::int64_t live_from, std::int64_t settled_before,
                                        std::int64_t held_before, std::vector<std::int64_t>& dead);
  Shard& shard_of(const JournalKey& key) noexcept { return shards_[(key.hash >> 56U) % kShards]; }

  std::array<Shard, kShards> shards_;
};

}  // namespace sluice::store
