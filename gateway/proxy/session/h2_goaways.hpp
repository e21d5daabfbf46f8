// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <prometheus/counter.h>

#include <array>
#include <cstdint>
#include <string_view>

#include "gateway/metrics/metrics.hpp"

// `sluice_http2_goaways_total{listener, error}` of one listener (docs/http2.md, "When a
// connection ends").
namespace sluice::proxy {

/// The GOAWAY counters of one listener, one per RFC 9113 error code (and one for codes past
/// them), made when the listener is bound. Counting is lock-free; thread-safe.
class GoawayCounters {
 public:
  GoawayCounters(metrics::Metrics& metrics, std::string_view listener);
  void count(std::uint32_t error_code) const;
  /// The label of `error_code`: "no_error", "protocol_error", ... (RFC 9113 §7, lower case),
  /// "unknown" past them.
  [[nodiscard]] static std::string_view name(std::uint32_t error_code) noexcept;

 private:
  static constexpr std::size_t kCodes = 14;  ///< NO_ERROR (0x0) .. HTTP_1_1_REQUIRED (0xd)
  std::array<prometheus::Counter*, kCodes + 1> counters_{};  ///< the last: unknown codes
};

}  // namespace sluice::proxy
