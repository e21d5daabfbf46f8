// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>

#include "gateway/core/clock.hpp"
#include "gateway/proxy/request/request_context.hpp"

namespace sluice::proxy {

/// Step 3, breaker (docs/behaviour.md "Breakers", docs/latency-protection.md): asks the
/// backend's adaptive breaker at `now`, then its concurrency limit when it has one.
/// Admitted: `ctx.admission` holds the guard that the record step settles, and
/// `ctx.concurrency_slot` the request's place under the limit. Dropped: the drop is counted
/// (`sluice_breaker_drops_total`) and the answer is 503 `backend_unavailable`; a shadow
/// breaker's would-be drop is counted (`sluice_breaker_shadow_drops_total`) and admitted. Over
/// the concurrency limit: 503 `backend_overloaded` (the breaker's admission is abandoned: the
/// request never went upstream). Both 503s carry `Retry-After: 1` and the backend named in the
/// body. Sets `ctx.breaker_label`. Needs the backend.
[[nodiscard]] std::optional<GatewayError> breaker_step(RequestContext& ctx, core::TimePoint now);

}  // namespace sluice::proxy
