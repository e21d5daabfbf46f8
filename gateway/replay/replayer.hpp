// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/unordered/unordered_flat_map.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/core/keyed_hash.hpp"
#include "gateway/limiter/policy.hpp"
#include "gateway/proxy/routing/router.hpp"
#include "gateway/replay/log_line.hpp"
#include "gateway/replay/replay_clock.hpp"
#include "gateway/replay/replay_report.hpp"
#include "gateway/store/memory_store.hpp"

namespace sluice::replay {

struct ReplayOptions {
  std::size_t top_users = 10;
  /// Lines may be out of order by this much (threads hand their batches over every 250 ms, and
  /// a line is written when its request ends); later ones are decided at the latest time seen.
  std::chrono::milliseconds reorder_window{2000};
  /// The access log's `user` hash (the new config's `access_log.user_hash_key_env` secret): with
  /// it, override keys are hashed into labels and apply; without, overrides cannot be matched.
  std::optional<core::KeyedHash> user_hash;
  /// Users (label, policy) counted for the top list at most; totals stay exact beyond.
  std::size_t max_tracked_users = std::size_t{1} << 22U;
};

/// Re-decides logged requests under a new config's policies (docs/decisions/0015-what-if-replay.md)
/// with the gateway's own limiter: a MemoryStore (capped at the new `store.max_keys`) on a
/// ReplayClock set to each request's logged time. Lines go through a min-heap on time that holds
/// `reorder_window` of them, so lines written slightly out of order are decided in order. A line
/// maps to a policy by its route's name in the new config, else by the new config's router (host,
/// method, path). Keys are the log's user labels: the counts per user are the gateway's.
/// Confined to one thread. Keeps no reference to the config.
class Replayer {
 public:
  Replayer(const config::Config& next, ReplayOptions options);
  ~Replayer();
  Replayer(const Replayer&) = delete;
  Replayer& operator=(const Replayer&) = delete;

  /// Takes one line: returns why it cannot be replayed (malformed), or "" when it was taken (or
  /// counted as unrouted). Views in `line` need only live for the call.
  [[nodiscard]] std::string_view add(const LogLine& line);
  /// Decides every line still held back. Call once, after the last add().
  void finish();
  /// The counts so far, and the top users (after finish(): of every line). `lines`, `malformed`
  /// and `slow_parsed` are the caller's to fill in.
  [[nodiscard]] ReplayReport report() const;

 private:
  /// A line waiting in the reorder heap (no allocation per line).
  struct Pending {
    core::TimePoint at;
    std::uint64_t seq = 0;
    std::uint64_t label = 0;
    std::uint32_t policy = 0;  ///< index into policies_; none_index() for no limit
    std::uint8_t then = 0;     ///< limiter::Verdict as logged (none counts as allowed)
  };
  struct PolicyState {
    PolicyTotals totals;
    limiter::Policy policy;  ///< applied to the store when it is made
    store::PolicyId id;
    std::size_t override_keys = 0;
    bool overrides_matched = false;
    std::vector<std::uint64_t> override_labels;  ///< when matched
  };
  struct UserCounts {
    std::uint32_t requests = 0;
    std::uint32_t limited_then = 0;
    std::uint32_t limited_now = 0;
  };

  [[nodiscard]] std::optional<std::uint32_t> policy_of(const LogLine& line) const;
  [[nodiscard]] std::uint32_t none_index() const {
    return static_cast<std::uint32_t>(policies_.size() - 1);
  }
  void drain(core::TimePoint up_to);
  void decide(const Pending& pending);
  void count_user(const Pending& pending, bool limited_now);
  void prepare_overrides(PolicyState& state, const ReplayOptions& options);
  [[nodiscard]] std::vector<UserChange> top_users() const;

  ReplayOptions options_;
  std::uint64_t max_keys_;
  ReplayClock clock_;
  std::unique_ptr<store::MemoryStore> store_;  ///< made at the first decision's time
  core::TimePoint last_sweep_{};
  std::vector<PolicyState> policies_;  ///< by name, then the "(none)" row
  std::vector<std::pair<std::string, std::uint32_t>> route_policy_;  ///< route name -> index
  proxy::Router router_;
  std::vector<Pending> heap_;
  std::uint64_t seq_ = 0;
  std::optional<core::TimePoint> latest_seen_;
  std::optional<core::TimePoint> decided_up_to_;
  std::optional<LogTime> first_;
  std::optional<LogTime> last_;
  boost::unordered_flat_map<std::uint64_t, UserCounts> users_;  ///< (policy << 48) | label
  ReplayReport counts_;  ///< replayed, unrouted_*, late, untracked_requests
};

}  // namespace sluice::replay
