// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "gateway/core/clock.hpp"

namespace sluice::limiter {

enum class Mode { kEnforce, kShadow };

/// What the gateway does with a decision (the `result` label of
/// `sluice_ratelimit_requests_total`).
enum class Verdict { kAllowed, kLimited, kShadowLimited };

/// Shadow mode decides exactly as enforce would (and counts the same requests) but never
/// rejects: a request enforce would limit passes as `kShadowLimited`.
[[nodiscard]] constexpr Verdict verdict(bool allowed, Mode mode) noexcept {
  if (allowed) {
    return Verdict::kAllowed;
  }
  return mode == Mode::kShadow ? Verdict::kShadowLimited : Verdict::kLimited;
}

/// True when the request must be answered 429.
[[nodiscard]] constexpr bool rejects(Verdict v) noexcept {
  return v == Verdict::kLimited;
}

/// A sliding-window rate-limit policy (docs/behaviour.md "Configuration", `limits`): at most
/// `requests` admitted per `window` per user key, counted in `buckets` equal sub-windows, with
/// per-key overrides of `requests`. A plain value; stores copy what they need.
struct Policy {
  std::string name;
  std::uint32_t requests = 0;
  std::chrono::milliseconds window{0};
  std::uint32_t buckets = 1;
  Mode mode = Mode::kEnforce;
  /// Raw user key -> requests for that key (0 blocks the key).
  std::map<std::string, std::uint32_t, std::less<>> overrides;

  [[nodiscard]] core::Duration bucket_width() const {
    return std::chrono::duration_cast<core::Duration>(window) / buckets;
  }
};

}  // namespace sluice::limiter
