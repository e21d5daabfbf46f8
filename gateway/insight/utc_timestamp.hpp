// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <string>

namespace sluice::insight {

/// `at` as UTC ISO 8601 with milliseconds: "2026-11-26T12:00:00.123Z" (the `ts` of events and
/// of config versions).
[[nodiscard]] std::string utc_timestamp(std::chrono::system_clock::time_point at);

}  // namespace sluice::insight
