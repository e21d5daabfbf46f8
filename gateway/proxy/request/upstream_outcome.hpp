// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>

#include "gateway/breaker/adaptive_breaker.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/proxy/request/errors.hpp"

namespace sluice::proxy {

/// What the upstream did with one request.
enum class UpstreamResult {
  kNotSent,       ///< never reached the upstream for a reason of the client's (or was not tried)
  kResponse,      ///< a response head arrived, and its body did not fail on the upstream's side
  kConnectError,  ///< no connection could be made
  kTimeout,       ///< no response head (or no body progress) within timeout_ms
  kReset,         ///< the upstream closed or reset before the response was complete
};

/// What the breaker window records for a request.
enum class BreakerRecord { kNothing, kSuccess, kFailure };

/// One row of the outcome table.
struct OutcomeRow {
  /// The gateway's answer when nothing of a response reached the client (502/504), or none.
  std::optional<GatewayError> reply;
  /// The `outcome` of `sluice_upstream_requests_total`, or none (not sent).
  std::optional<metrics::UpstreamOutcome> metric;
  BreakerRecord breaker = BreakerRecord::kNothing;
};

/// The one table mapping an upstream result to (reply, metrics outcome, breaker outcome)
/// (docs/behaviour.md "Breakers"): a response is an accept unless its status is one of the
/// backend's failure statuses (`is_failure`); connect errors, resets and timeouts are failures
/// answered 502/504/502; a request that never reached the upstream records nothing.
[[nodiscard]] OutcomeRow classify(UpstreamResult result, bool failure_status) noexcept;

}  // namespace sluice::proxy
