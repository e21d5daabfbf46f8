// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/traffic_policy.hpp"

#include <array>
#include <chrono>

namespace sluice::proxy {

limiter::Verdict count_decision(const RouteLimit& limit, const limiter::LimitDecision& decision) {
  const limiter::Verdict verdict = limiter::verdict(decision.allowed, limit.mode);
  limit.metrics->results[static_cast<std::size_t>(verdict)]->Increment();
  return verdict;
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

std::string user_label(const core::KeyedHash& hash, std::string_view user) {
  static constexpr std::array<char, 16> kHex{'0', '1', '2', '3', '4', '5', '6', '7',
                                             '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  std::uint64_t h = hash(user);
  std::string out(12, '0');
  for (std::size_t i = out.size(); i-- > 0; h >>= 4U) {
    out[i] = kHex[h & 0xfU];
  }
  return out;
}

void record_upstream(const Backend& backend, const ExchangeOutcome& outcome,
                     std::optional<breaker::Admission>& admission, core::TimePoint now) {
  metrics::BackendMetrics& m = backend.metrics();
  if (outcome.upstream_time) {
    m.upstream_duration->Observe(std::chrono::duration<double>(*outcome.upstream_time).count());
  }
  bool failed = true;
  switch (outcome.upstream) {
    case UpstreamResult::kNotSent:
      if (admission) {
        std::move(*admission).abandon();
      }
      return;
    case UpstreamResult::kResponse:
      failed = backend.is_failure(outcome.upstream_status);
      m.count(failed ? metrics::UpstreamOutcome::kFailure : metrics::UpstreamOutcome::kSuccess);
      break;
    case UpstreamResult::kConnectError:
      m.count(metrics::UpstreamOutcome::kConnectError);
      break;
    case UpstreamResult::kTimeout:
      m.count(metrics::UpstreamOutcome::kTimeout);
      break;
    case UpstreamResult::kReset:
      m.count(metrics::UpstreamOutcome::kReset);
      break;
  }
  if (!admission) {
    return;
  }
  if (failed) {
    std::move(*admission).failed(now);
  } else {
    std::move(*admission).succeeded(now);
  }
}

}  // namespace sluice::proxy
