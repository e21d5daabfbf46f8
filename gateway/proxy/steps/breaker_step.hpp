// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>

#include "gateway/core/clock.hpp"
#include "gateway/proxy/request/request_context.hpp"

namespace sluice::proxy {

/// Step 3, breaker (docs/behaviour.md "Breakers"): asks the backend's adaptive breaker at
/// `now`. Admitted: `ctx.admission` holds the guard that the record step settles. Dropped: the
/// drop is counted (`sluice_breaker_drops_total`) and the answer is 503 `backend_unavailable`
/// with `Retry-After: 1` and the backend named in the body. Sets `ctx.breaker_label`. Needs the
/// backend.
[[nodiscard]] std::optional<GatewayError> breaker_step(RequestContext& ctx, core::TimePoint now);

}  // namespace sluice::proxy
