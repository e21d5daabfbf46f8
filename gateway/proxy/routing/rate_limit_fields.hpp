// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/limiter/policy.hpp"
#include "gateway/limiter/sliding_window.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/store/limit_store.hpp"

namespace sluice::proxy {

/// A route's rate-limit policy, compiled once per config version: the store's id for it and
/// the pieces of its response fields that do not change per request. Immutable.
struct RouteLimit {
  store::PolicyId id;
  /// Each tier of `tiers[name]` and its own store policy (docs/identity.md "Tiers").
  std::vector<std::pair<std::string, store::PolicyId>> tiers;
  std::string name;
  limiter::Mode mode = limiter::Mode::kEnforce;
  std::uint64_t window_s = 0;  ///< `w`: window_ms / 1000 rounded up
  std::string quoted_name;     ///< the name as a Structured Field string: "name"
  std::string json_name;       ///< the name as a JSON string
  metrics::PolicyMetrics* metrics = nullptr;
  /// The policy's heavy-hitter sketch (insight::TopUsersRegistry::sync), 0 with
  /// `admin.top_users` off: every decision is sampled to it through the worker's ring.
  std::uint32_t top_users = 0;
};

/// Whole seconds, rounded up (docs/behaviour.md "Precise semantics": `t`, `Retry-After`).
[[nodiscard]] std::uint64_t whole_seconds_up(core::Duration d) noexcept;

/// `s` as an RFC 8941 sf-string: in double quotes, `"` and `\` escaped; other characters
/// outside printable ASCII are replaced by `?` (policy names come from config).
[[nodiscard]] std::string structured_string(std::string_view s);

/// The `RateLimit-Policy` and `RateLimit` field values of the IETF httpapi ratelimit-headers
/// draft, as docs/behaviour.md "Limits" spells them, for one decision.
/// The values live in inline buffers (no allocation for names of usual length); not movable
/// cheaply, so fill one in place with rate_limit_fields().
struct RateLimitFields {
  fmt::basic_memory_buffer<char, 96> policy_text;
  fmt::basic_memory_buffer<char, 96> state_text;
  std::uint64_t retry_after_s = 0;  ///< denied only: `Retry-After` (at least 1)

  /// "P";q=LIMIT;w=WINDOW_S
  [[nodiscard]] std::string_view policy() const { return {policy_text.data(), policy_text.size()}; }
  /// "P";r=REMAINING;t=SECONDS
  [[nodiscard]] std::string_view state() const { return {state_text.data(), state_text.size()}; }
};

void rate_limit_fields(const RouteLimit& limit, const limiter::LimitDecision& decision,
                       RateLimitFields& out);

/// The 429 body: {"error":"rate_limited","policy":P,"retry_after_s":N}.
[[nodiscard]] std::string limited_body(const RouteLimit& limit, std::uint64_t retry_after_s);

/// `s` as a JSON string literal (with quotes).
[[nodiscard]] std::string json_string(std::string_view s);

}  // namespace sluice::proxy
