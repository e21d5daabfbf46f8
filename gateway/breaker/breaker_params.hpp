// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>

namespace sluice::breaker {

/// Tuning of one adaptive breaker (docs/behaviour.md "Configuration", `breaker`; which statuses
/// count as failures is the caller's classification, not the breaker's).
struct BreakerParams {
  bool enabled = true;
  double k = 1.5;           ///< accepts are weighted by k: higher k tolerates more failures
  double protection = 5.0;  ///< requests forgiven per window, so low traffic never trips
  std::chrono::milliseconds window{10000};
  std::uint32_t buckets = 40;
  /// Shadow: p is computed and published, would-be drops are counted, nothing is dropped.
  bool shadow = false;

  friend bool operator==(const BreakerParams&, const BreakerParams&) = default;
};

/// What the breaker learns from one request that was sent upstream.
enum class Outcome { kSuccess, kFailure };

/// The breaker window as it stands, plus drops counted beside it.
struct BreakerSnapshot {
  std::uint64_t requests = 0;      ///< completed upstream requests in the window
  std::uint64_t accepts = 0;       ///< of which accepted (not failures)
  double drop_probability = 0.0;   ///< what the next request faces (0 while disabled)
  std::uint64_t drops = 0;         ///< requests dropped since the breaker was created
  std::uint64_t shadow_drops = 0;  ///< requests a shadow breaker would have dropped
  bool shadow = false;
};

}  // namespace sluice::breaker
