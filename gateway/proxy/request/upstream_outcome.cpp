// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/request/upstream_outcome.hpp"

namespace sluice::proxy {

OutcomeRow classify(UpstreamResult result, bool failure_status) noexcept {
  using metrics::UpstreamOutcome;
  switch (result) {
    case UpstreamResult::kNotSent:
      return {std::nullopt, std::nullopt, BreakerRecord::kNothing};
    case UpstreamResult::kResponse:
      return failure_status
                 ? OutcomeRow{std::nullopt, UpstreamOutcome::kFailure, BreakerRecord::kFailure}
                 : OutcomeRow{std::nullopt, UpstreamOutcome::kSuccess, BreakerRecord::kSuccess};
    case UpstreamResult::kConnectError:
      return {GatewayError::kUpstreamConnect, UpstreamOutcome::kConnectError,
              BreakerRecord::kFailure};
    case UpstreamResult::kTimeout:
      return {GatewayError::kUpstreamTimeout, UpstreamOutcome::kTimeout, BreakerRecord::kFailure};
    case UpstreamResult::kReset:
      return {GatewayError::kUpstreamReset, UpstreamOutcome::kReset, BreakerRecord::kFailure};
  }
  return {};
}

}  // namespace sluice::proxy
