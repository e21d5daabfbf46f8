// SPDX-License-Identifier: Apache-2.0
#include "gateway/core/utc_time.hpp"

#include <ctime>

namespace sluice::core {

std::string utc_iso8601(std::chrono::system_clock::time_point at) {
  const std::time_t t = std::chrono::system_clock::to_time_t(at);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace sluice::core
