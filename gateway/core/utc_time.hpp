// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <string>

// Wall-clock instants as operators read them in admin answers and logs.
namespace sluice::core {

/// `at` as "YYYY-MM-DDTHH:MM:SSZ" (UTC, whole seconds). Thread-safe.
[[nodiscard]] std::string utc_iso8601(std::chrono::system_clock::time_point at);

}  // namespace sluice::core
