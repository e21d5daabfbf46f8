// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>

#include "gateway/insight/user_sample_ring.hpp"
#include "gateway/limiter/sliding_window.hpp"
#include "gateway/proxy/request/request_context.hpp"
#include "gateway/store/limit_store.hpp"

namespace sluice::proxy {

/// Step 2, limit (docs/behaviour.md "Limits"), in two halves so the common case (a store that
/// decides without I/O) costs no coroutine: ask the store with limit_now(); when it answers
/// nullopt, `co_await store.decide(...)`; then apply_limit() the decision.

/// The route's policy, or null when the route has no limit.
[[nodiscard]] const RouteLimit* route_limit(const RequestContext& ctx) noexcept;

/// The store policy `ctx.user` is decided under: the policy's own, or its tier's
/// (`tiers`, docs/identity.md "Tiers") when the verified user has a tier it lists.
[[nodiscard]] store::PolicyId limit_policy(const RequestContext& ctx,
                                           const RouteLimit& limit) noexcept;

/// The store's decision for `ctx.user` under `limit` if it can decide at once.
[[nodiscard]] std::optional<limiter::LimitDecision> limit_now(const RequestContext& ctx,
                                                              const RouteLimit& limit,
                                                              store::LimitStore& store,
                                                              store::StoreSlot slot);

/// Applies a decision: counts it in the policy's metrics and heavy hitters, fills the rate-limit
/// response fields
/// (`RateLimit-Policy`, `RateLimit`) and returns the answer when the request must not pass:
/// 429 (`ctx.reply_body` and `ctx.retry_after_s` set) or 503 `limit_store_unavailable` (the
/// shared store failed with `on_error: deny`).
/// With `samples` (the worker's ring, null with `admin.top_users` off) and the policy's sketch,
/// the decision is also queued for the policy's heavy hitters.
[[nodiscard]] std::optional<GatewayError> apply_limit(RequestContext& ctx, const RouteLimit& limit,
                                                      const limiter::LimitDecision& decision,
                                                      insight::UserSampleRing* samples);

/// The access log's `limit`: allowed | limited | shadow_limited | none.
[[nodiscard]] std::string_view limit_label(std::optional<limiter::Verdict> verdict) noexcept;

}  // namespace sluice::proxy
