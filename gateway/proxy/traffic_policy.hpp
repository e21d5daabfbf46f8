// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gateway/breaker/adaptive_breaker.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/core/keyed_hash.hpp"
#include "gateway/limiter/policy.hpp"
#include "gateway/limiter/sliding_window.hpp"
#include "gateway/proxy/exchange.hpp"
#include "gateway/proxy/rate_limit_fields.hpp"
#include "gateway/proxy/snapshot.hpp"

// The per-request policy steps between routing and forwarding (SPEC §4: identify, rate limit,
// breaker) and the bookkeeping after it. Stateless functions over thread-safe state.
namespace sluice::proxy {

/// Counts a limiter decision under its policy's metrics and returns the verdict.
limiter::Verdict count_decision(const RouteLimit& limit, const limiter::LimitDecision& decision);

/// The access log `limit` field: allowed | limited | shadow_limited | none.
[[nodiscard]] std::string_view limit_label(std::optional<limiter::Verdict> verdict) noexcept;

/// The access log `user` field: the first 12 hex digits of the keyed hash of `user`.
[[nodiscard]] std::string user_label(const core::KeyedHash& hash, std::string_view user);

/// Feeds what the upstream did into the backend's breaker (through `admission`, which is
/// consumed) and `sluice_upstream_*` metrics (SPEC §4: a status in failure_statuses, a connect
/// error, a reset or a timeout is a failure; a request that never reached the upstream through
/// the client's doing is not recorded).
void record_upstream(const Backend& backend, const ExchangeOutcome& outcome,
                     std::optional<breaker::Admission>& admission, core::TimePoint now);

}  // namespace sluice::proxy
