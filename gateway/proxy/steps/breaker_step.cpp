// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/steps/breaker_step.hpp"

namespace sluice::proxy {

std::optional<GatewayError> breaker_step(RequestContext& ctx, core::TimePoint now) {
  const Backend& backend = *ctx.backend;
  ctx.breaker_label = backend.config().breaker.enabled ? "pass" : "off";
  if (auto admitted = backend.breaker().try_admit(now)) {
    ctx.admission.emplace(std::move(*admitted));
    return std::nullopt;
  }
  backend.metrics().breaker_drops->Increment();
  ctx.breaker_label = "dropped";
  ctx.retry_after_s = 1;
  ctx.reply_body = backend.unavailable_body();
  return GatewayError::kBackendUnavailable;
}

}  // namespace sluice::proxy
