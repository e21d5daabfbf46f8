// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/steps/limit_step.hpp"

namespace sluice::proxy {

const RouteLimit* route_limit(const RequestContext& ctx) noexcept {
  return ctx.route != nullptr ? ctx.route->rate_limit : nullptr;
}

store::PolicyId limit_policy(const RequestContext& ctx, const RouteLimit& limit) noexcept {
  if (!ctx.tier.empty()) {
    for (const auto& [tier, id] : limit.tiers) {
      if (tier == ctx.tier) {
        return id;
      }
    }
  }
  return limit.id;
}

std::optional<limiter::LimitDecision> limit_now(const RequestContext& ctx, const RouteLimit& limit,
                                                store::LimitStore& store, store::StoreSlot slot) {
  return store.try_decide(slot, limit_policy(ctx, limit), ctx.user);
}

std::optional<GatewayError> apply_limit(RequestContext& ctx, const RouteLimit& limit,
                                        const limiter::LimitDecision& decision,
                                        insight::UserSampleRing* samples) {
  const limiter::Verdict verdict = limiter::verdict(decision.allowed, limit.mode);
  limit.metrics->results[static_cast<std::size_t>(verdict)]->Increment();
  ctx.verdict = verdict;
  if (samples != nullptr && limit.top_users != 0 && ctx.has_user_hash) {
    // Limited: a 429, or one shadow mode let through; not a store failure's deny. A full ring
    // drops the sample (counted): the worker never waits for the sketches.
    samples->push({.user = ctx.user_hash,
                   .at = ctx.started,
                   .sketch = limit.top_users,
                   .limited = !decision.allowed && !decision.unavailable});
  }
  if (decision.unavailable) {  // the shared store failed and on_error is "deny"
    if (!limiter::rejects(verdict)) {
      return std::nullopt;  // shadow: deny decides as "limited", and shadow never refuses
    }
    ctx.retry_after_s = 1;
    return GatewayError::kLimitStoreUnavailable;
  }
  rate_limit_fields(limit, decision, ctx.rate_fields);
  ctx.extra[0] = {"RateLimit-Policy", ctx.rate_fields.policy()};
  ctx.extra[1] = {"RateLimit", ctx.rate_fields.state()};
  ctx.extra_count = 2;
  if (!limiter::rejects(verdict)) {
    return std::nullopt;
  }
  ctx.retry_after_s = static_cast<unsigned>(ctx.rate_fields.retry_after_s);
  ctx.body_scratch = limited_body(limit, ctx.rate_fields.retry_after_s);
  ctx.reply_body = ctx.body_scratch;
  return GatewayError::kRateLimited;
}

std::string_view limit_label(std::optional<limiter::Verdict> verdict) noexcept {
  if (!verdict) {
    return "none";
  }
  switch (*verdict) {
    case limiter::Verdict::kAllowed:
      return "allowed";
    case limiter::Verdict::kLimited:
      return "limited";
    case limiter::Verdict::kShadowLimited:
      return "shadow_limited";
  }
  return "none";
}

}  // namespace sluice::proxy
