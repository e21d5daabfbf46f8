// SPDX-License-Identifier: Apache-2.0
// What `sluice replay` found (docs/operating.md "What-if replay"), and its two renderings.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace sluice::replay {

/// The row name of requests whose route has no limit under the new config.
inline constexpr std::string_view kNoPolicy = "(none)";

/// One policy of the new config: what its requests got then (the logged `limit`) and now (the
/// new policy's decision). Shadow-limited requests passed, so they count as allowed; the
/// shadow_limited_* fields say how many of them the policy would have limited.
struct PolicyTotals {
  std::string policy;
  std::uint64_t requests = 0;
  std::uint64_t allowed_then = 0;
  std::uint64_t limited_then = 0;
  std::uint64_t shadow_limited_then = 0;
  std::uint64_t allowed_now = 0;
  std::uint64_t limited_now = 0;
  std::uint64_t shadow_limited_now = 0;

  /// limited_now - limited_then.
  [[nodiscard]] std::int64_t delta() const noexcept {
    return static_cast<std::int64_t>(limited_now) - static_cast<std::int64_t>(limited_then);
  }
};

/// One user (its access log label) under one policy whose limited count changed.
struct UserChange {
  std::string user;
  std::string policy;
  std::uint64_t requests = 0;
  std::uint64_t limited_then = 0;
  std::uint64_t limited_now = 0;

  [[nodiscard]] std::int64_t delta() const noexcept {
    return static_cast<std::int64_t>(limited_now) - static_cast<std::int64_t>(limited_then);
  }
};

/// A policy with per-key overrides, and whether they could be matched to the log's labels.
struct OverrideNote {
  std::string policy;
  std::size_t keys = 0;
  bool matched = false;  ///< hashed with the log's key (user_hash_key_env) and applied
  std::size_t seen = 0;  ///< override keys whose label appears in the log (when matched)
};

struct ReplayReport {
  std::uint64_t lines = 0;          ///< non-blank lines read
  std::uint64_t replayed = 0;       ///< re-decided (or counted under "(none)")
  std::uint64_t malformed = 0;      ///< unusable lines (listed on stderr)
  std::uint64_t slow_parsed = 0;    ///< lines the fast scanner left to nlohmann::json
  std::uint64_t unrouted_then = 0;  ///< `route` "none": never reached a limiter
  std::uint64_t unrouted_now = 0;   ///< routed then, to a route the new config does not match
  std::uint64_t late = 0;  ///< arrived after the reorder window: decided at the latest time seen
  std::uint64_t reorder_window_ms = 0;
  std::uint64_t untracked_requests = 0;  ///< of users beyond the per-user table's cap
  std::optional<std::string> first_ts;
  std::optional<std::string> last_ts;
  std::vector<PolicyTotals> policies;  ///< the new config's policies by name, then "(none)"
  std::vector<UserChange> top_users;   ///< largest |delta| first
  std::vector<OverrideNote> overrides;
};

/// An aligned table per policy, the most affected users, and one line of what was skipped.
void write_text(const ReplayReport& report, std::ostream& out);

/// The same as one JSON object (the field names of the structs above; `delta` included).
[[nodiscard]] nlohmann::ordered_json to_json(const ReplayReport& report);

}  // namespace sluice::replay
