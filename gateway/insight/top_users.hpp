// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/insight/space_saving.hpp"
#include "gateway/insight/user_sample_ring.hpp"

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
/// requests, and how many were limited, over the policy's window. Two Space-Saving summaries of
/// kMaxEntries / 2 entries each, the current window and the previous one, aligned to a grid of
/// `window` from construction. An answer estimates each user's sliding-window count as the
/// limiters' usual approximation: current + previous x (the share of the previous window still
/// inside the sliding one); an unmonitored count is taken at its bound
/// (SpaceSaving::min_count()), so every estimate stays an upper bound and `error_bound` says how
/// far above.
///
/// Confined to one thread (the control thread: the workers hand it their decisions through
/// UserSampleRings, decision 0018). The clock outlives it.
class TopUsers {
 public:
  /// Entries (monitored users) per policy, both windows together.
  static constexpr std::size_t kMaxEntries = 1024;

  /// Precondition: window > 0.
  TopUsers(const core::Clock& clock, std::chrono::milliseconds window);

  /// Counts one request of `user` (and one limited decision when `limited`) that started at
  /// `at`, a reading of the same clock. Samples come a little out of order (several workers,
  /// each drained in turn): one from before the current window counts into it.
  void count(std::uint64_t user, bool limited, core::TimePoint at) noexcept;

  /// The `n` heaviest users now (fewer when fewer are tracked).
  [[nodiscard]] TopAnswer top(std::size_t n);

  [[nodiscard]] std::chrono::milliseconds window() const noexcept { return window_; }

 private:
  /// Moves the windows forward to the one holding `now`.
  void roll(core::TimePoint now) noexcept;

  const core::Clock& clock_;
  const std::chrono::milliseconds window_;
  const core::Duration width_;
  SpaceSaving current_;
  SpaceSaving previous_;
  core::TimePoint start_;  ///< where `current_` begins
};

/// The sketches of every policy of the running config, and the rings through which the workers
/// feed them (decision 0018). ConfigSync binds each config version's policies here (a policy
/// keeps its sketch across versions while its window stays) and drops the policies a version no
/// longer has; the snapshot carries each policy's sketch id. A worker pushes each decision into
/// its own ring (ring(worker)); drain(), on a timer and before every answer, applies them.
///
/// Confined to the control thread (the admin API runs there too), except ring(), whose rings
/// are each pushed by their worker's thread (they are created here, before the workers run, and
/// live as long as the registry). The clock outlives it.
class TopUsersRegistry {
 public:
  /// Samples per worker ring: 16384 (384 KiB) last 50 ms at 327,000 decisions per second.
  static constexpr std::size_t kRingCapacity = 16384;

  /// `workers`: one ring each.
  TopUsersRegistry(const core::Clock& clock, std::size_t workers);

  /// The ring of worker `index` (< workers).
  [[nodiscard]] UserSampleRing& ring(std::size_t index) noexcept { return *rings_[index]; }

  /// The sketch id of `policy`: the one it has, or a fresh sketch when the policy is new or its
  /// window changed (the old counts were for another window). Ids are never reused.
  [[nodiscard]] std::uint32_t sync(const std::string& policy, std::chrono::milliseconds window);
  /// Forgets `policy` (samples still queued for its sketch are dropped at the next drain).
  void remove(std::string_view policy);
  /// Applies every sample the workers have queued; returns how many.
  std::size_t drain();
  /// The sketch of `policy`, or null. Call drain() first for the latest counts.
  [[nodiscard]] TopUsers* find(std::string_view policy);
  /// Samples refused by full rings, every worker together, since construction.
  [[nodiscard]] std::uint64_t dropped() const noexcept;

 private:
  struct Sketch {
    std::uint32_t id;
    std::unique_ptr<TopUsers> users;
  };

  const core::Clock& clock_;
  std::vector<std::unique_ptr<UserSampleRing>> rings_;
  std::map<std::string, Sketch, std::less<>> sketches_;
  std::map<std::uint32_t, TopUsers*> by_id_;
  std::uint32_t next_id_ = 1;  ///< 0 is "not counted" in the snapshot
};

}  // namespace sluice::insight
