// SPDX-License-Identifier: Apache-2.0
#include "gateway/insight/utc_timestamp.hpp"

#include <array>
#include <cstdio>
#include <ctime>

namespace sluice::insight {

std::string utc_timestamp(std::chrono::system_clock::time_point at) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const auto since_epoch = duration_cast<milliseconds>(at.time_since_epoch()).count();
  // Floor division, so a time before 1970 still gets a millisecond part in [0, 999].
  auto seconds = static_cast<std::time_t>(since_epoch / 1000);
  auto millis = since_epoch % 1000;
  if (millis < 0) {
    millis += 1000;
    --seconds;
  }
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  std::array<char, 40> buffer{};
  const int n = std::snprintf(buffer.data(), buffer.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                              tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                              tm.tm_sec, static_cast<int>(millis));
  return std::string(buffer.data(), n > 0 ? static_cast<std::size_t>(n) : 0);
}

}  // namespace sluice::insight
