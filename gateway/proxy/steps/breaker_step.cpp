// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/steps/breaker_step.hpp"

namespace sluice::proxy {

std::optional<GatewayError> breaker_step(RequestContext& ctx, core::TimePoint now) {
  const Backend& backend = *ctx.backend;
  ctx.breaker_label = backend.config().breaker.enabled ? "pass" : "off";
  auto admitted = backend.breaker().try_admit(now);
  if (!admitted) {
    backend.metrics().breaker_drops->Increment();
    ctx.breaker_label = "dropped";
    ctx.retry_after_s = 1;
    ctx.reply_body = backend.unavailable_body();
    return GatewayError::kBackendUnavailable;
  }
  if (admitted->shadow_dropped()) {
    backend.metrics().breaker_shadow_drops->Increment();
    ctx.breaker_label = "shadow_drop";
  }
  if (breaker::ConcurrencyLimit* limit = backend.concurrency()) {
    auto slot = limit->try_acquire();
    if (!slot) {
      std::move(*admitted).abandon();  // never sent: the breaker window learns nothing
      ctx.breaker_label = "overloaded";
      ctx.retry_after_s = 1;
      ctx.reply_body = backend.overloaded_body();
      return GatewayError::kBackendOverloaded;
    }
    ctx.concurrency_slot.emplace(std::move(*slot));
  }
  ctx.admission.emplace(std::move(*admitted));
  return std::nullopt;
}

}  // namespace sluice::proxy
