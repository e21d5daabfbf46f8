// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/insight/space_saving.hpp"

namespace sluice::insight {

/// One user in an answer of TopUsers::top(): estimates over the sliding window.
struct TopUser {
  std::uint64_t user = 0;     ///< the keyed hash of the user (the access log label's source)
  std::uint64_t count = 0;    ///< requests: at least the true figure, at most error_bound above
  std::uint64_t limited = 0;  ///< limited decisions: at most the true figure, error_bound below
};

struct TopAnswer {
  std::vector<TopUser> users;     ///< heaviest first
  std::uint64_t error_bound = 0;  ///< the Space-Saving bound for this answer (0: exact)
  std::size_t tracked = 0;        ///< users the sketches hold now
};

/// The heavy hitters of one limit policy (docs/operating.md "Heavy hitters"): who sent the most
/// requests, and how many were limited, over the policy's window. At most kMaxEntries entries in
/// all: the users are split by hash over `shards` shards, each with two Space-Saving summaries,
/// the current window and the previous one, aligned to a grid of `window` from construction.
/// An answer estimates each user's sliding-window count as the limiters' usual approximation:
/// current + previous x (the share of the previous window still inside the sliding one); an
/// unmonitored count is taken at its bound (SpaceSaving::min_count()), so every estimate stays
/// an upper bound and `error_bound` (the largest bound of any shard) says how far above.
///
/// Thread-safe: each shard has its own mutex, held for one count (a probe and a few links moved,
/// no allocation) or while an answer copies the shard. Workers counting different users
/// rarely meet on one shard. The clock outlives it.
class TopUsers {
 public:
  /// Entries (monitored users) per policy, both windows and every shard together.
  static constexpr std::size_t kMaxEntries = 1024;

  /// Precondition: window > 0; shards a power of two, at most kMaxEntries / 2.
  TopUsers(const core::Clock& clock, std::chrono::milliseconds window, std::size_t shards);

  /// Counts one request of `user` (and one limited decision when `limited`) at `now`, a reading
  /// of the same clock (the request's start: callers need not read it again).
  void count(std::uint64_t user, bool limited, core::TimePoint now) noexcept;

  /// The `n` heaviest users now (fewer when fewer are tracked).
  [[nodiscard]] TopAnswer top(std::size_t n) const;

  [[nodiscard]] std::chrono::milliseconds window() const noexcept { return window_; }
  [[nodiscard]] std::size_t shard_count() const noexcept { return shards_.size(); }

 private:
  struct alignas(64) Shard {  // alone on its cache lines
    Shard(std::size_t capacity, core::TimePoint origin)
        : current(capacity), previous(capacity), start(origin) {}
    /// Moves the windows forward to the one holding `now`.
    void roll(core::TimePoint now, core::Duration window) noexcept;

    std::mutex mutex;
    SpaceSaving current;
    SpaceSaving previous;
    core::TimePoint start;  ///< where `current` begins
  };

  [[nodiscard]] Shard& shard_of(std::uint64_t user) const noexcept;

  const core::Clock& clock_;
  const std::chrono::milliseconds window_;
  const core::Duration width_;
  unsigned shard_shift_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

/// The sketches of every policy of the running config, by policy name: ConfigSync binds each
/// config version's policies here (a policy keeps its sketch across versions while its window
/// stays), and drops the policies a version no longer has. Confined to the control thread (the
/// admin API runs there too); the sketches it hands out are shared with the snapshots and are
/// thread-safe. The clock outlives it.
class TopUsersRegistry {
 public:
  /// `shards` per policy: shards_for(worker threads).
  TopUsersRegistry(const core::Clock& clock, std::size_t shards);

  /// Enough shards that `threads` workers rarely wait for each other: the next power of two,
  /// at most 8.
  [[nodiscard]] static std::size_t shards_for(std::size_t threads) noexcept;

  /// The sketch of `policy`: the one it has, or a fresh one when the policy is new or its window
  /// changed (the old counts were for another window).
  [[nodiscard]] std::shared_ptr<TopUsers> sync(const std::string& policy,
                                               std::chrono::milliseconds window);
  /// Forgets `policy` (requests on an older snapshot keep counting into its sketch unseen).
  void remove(std::string_view policy);
  /// The sketch of `policy`, or null.
  [[nodiscard]] std::shared_ptr<const TopUsers> find(std::string_view policy) const;

 private:
  const core::Clock& clock_;
  std::size_t shards_;
  std::map<std::string, std::shared_ptr<TopUsers>, std::less<>> sketches_;
};

}  // namespace sluice::insight
