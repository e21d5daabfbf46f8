// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/unordered/unordered_flat_map.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "gateway/core/clock.hpp"

namespace sluice::store {

/// One window in Redis under `store.mode: "hybrid"`: a policy and the keyed hash of a user key.
struct JournalKey {
  std::uint32_t policy = 0;
  std::uint64_t hash = 0;
  friend bool operator==(const JournalKey&, const JournalKey&) = default;
};

/// One key's exchange in a sync batch: the requests this thread admitted since its last push.
struct SyncItem {
  JournalKey key;
  std::uint32_t delta = 0;
};

/// What one thread of a hybrid replica knows about the windows it decided on
/// (docs/distributed.md, "Hybrid mode"): for each key, the requests it admitted and has not yet
/// pushed to Redis, and the other replicas' count in the window as the last sync returned it.
/// Every key decided on since the last flush is queued, once, in first-seen order, so a batch
/// that is capped serves the oldest first and no key starves. A key's "others" count is kept
/// while the key is active and forgotten `keep_for` after its last decision.
///
/// Confined to one thread (the io_context of its store slot): no locking.
class HybridJournal {
  struct Entry;

 public:
  /// A decision in progress on one key, found (or queued) with one look-up: what the decision
  /// reads and what it adds. Valid until the journal's next call.
  class Decision {
   public:
    /// The other replicas' count last learned for the key (0 when never synced).
    [[nodiscard]] std::uint32_t others() const noexcept;
    /// `admitted` requests are added to what the next push carries.
    void admit(std::uint32_t admitted) noexcept;

   private:
    friend class HybridJournal;
    explicit Decision(Entry& entry) noexcept : entry_(&entry) {}
    Entry* entry_;
  };
  /// Starts a decision on `key` at `now`. The key is queued even when the decision admits
  /// nothing: the next sync refreshes what the others hold.
  [[nodiscard]] Decision decide(const JournalKey& key, core::TimePoint now);
  /// The other replicas' count last learned for `key` (0 when never synced).
  [[nodiscard]] std::uint32_t others(const JournalKey& key) const;
  /// A decision on `key` at `now`; `admitted` requests are added to what the next push carries.
  void note(const JournalKey& key, std::uint32_t admitted, core::TimePoint now);
  /// Takes up to `max` queued keys that have no sync in flight, moving each one's pending
  /// delta into the batch; the keys left over stay queued, ahead of newer ones.
  [[nodiscard]] std::vector<SyncItem> take_batch(std::size_t max);
  /// A sync of `item` came back with the others' count (`others`), or failed (nullopt). After a
  /// failure, `resend` puts its delta back to go with the next push: for a push Redis cannot
  /// have run (no connection, an error reply). A push that timed out may still run in Redis,
  /// so its delta is not sent twice (at most once, as in exact mode).
  void complete(const SyncItem& item, std::optional<std::uint32_t> others, bool resend = false);
  /// Forgets keys with no decision since `now - keep_for` and nothing pending or in flight;
  /// returns how many.
  std::size_t forget_idle(core::TimePoint now, core::Duration keep_for);

  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] std::size_t queued() const { return queue_.size(); }
  /// Requests admitted here and not yet acknowledged by Redis (pending and in flight).
  [[nodiscard]] std::uint64_t unpushed() const;

 private:
  struct Entry {
    std::uint32_t pending = 0;    ///< admitted, not yet sent
    std::uint32_t in_flight = 0;  ///< sent, not yet acknowledged
    std::uint32_t others = 0;
    bool queued = false;
    bool flying = false;
    core::TimePoint last_seen{};
  };
  struct KeyHash {
    std::size_t operator()(const JournalKey& k) const noexcept {
      // The hash is already a keyed SipHash: mixing the policy in is enough.
      return static_cast<std::size_t>(k.hash ^ (std::uint64_t{k.policy} * 0x9E3779B97F4A7C15ULL));
    }
  };

  boost::unordered_flat_map<JournalKey, Entry, KeyHash> entries_;
  std::vector<JournalKey> queue_;  ///< keys to sync, oldest first
};

}  // namespace sluice::store
