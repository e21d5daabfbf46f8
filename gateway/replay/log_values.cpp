// SPDX-License-Identifier: Apache-2.0
// The values of access log fields a replay reads: the `ts` form and the `user` label.
#include <fmt/format.h>

#include "gateway/replay/log_line.hpp"

namespace sluice::replay {
namespace {

bool digits_at(std::string_view s, std::size_t at, std::size_t n, int& value) noexcept {
  value = 0;
  for (std::size_t k = at; k < at + n; ++k) {
    if (s[k] < '0' || s[k] > '9') {
      return false;
    }
    value = value * 10 + (s[k] - '0');
  }
  return true;
}

}  // namespace

std::optional<LogTime> parse_log_time(std::string_view s) noexcept {
  // YYYY-MM-DDTHH:MM:SS.mmmZ
  if (s.size() != 24 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
      s[16] != ':' || s[19] != '.' || s[23] != 'Z') {
    return std::nullopt;
  }
  int y = 0;
  int mo = 0;
  int d = 0;
  int h = 0;
  int mi = 0;
  int sec = 0;
  int ms = 0;
  if (!digits_at(s, 0, 4, y) || !digits_at(s, 5, 2, mo) || !digits_at(s, 8, 2, d) ||
      !digits_at(s, 11, 2, h) || !digits_at(s, 14, 2, mi) || !digits_at(s, 17, 2, sec) ||
      !digits_at(s, 20, 3, ms) || h > 23 || mi > 59 || sec > 59) {
    return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year(y),
                                         std::chrono::month(static_cast<unsigned>(mo)),
                                         std::chrono::day(static_cast<unsigned>(d))};
  if (!date.ok()) {
    return std::nullopt;
  }
  return LogTime(std::chrono::sys_days(date).time_since_epoch() + std::chrono::hours(h) +
                 std::chrono::minutes(mi) + std::chrono::seconds(sec) +
                 std::chrono::milliseconds(ms));
}

std::string format_log_time(LogTime t) {
  const auto day = std::chrono::floor<std::chrono::days>(t);
  const std::chrono::year_month_day date(day);
  const std::chrono::hh_mm_ss<std::chrono::milliseconds> time(t - day);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", static_cast<int>(date.year()),
                     static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                     time.hours().count(), time.minutes().count(), time.seconds().count(),
                     time.subseconds().count());
}

std::optional<std::uint64_t> parse_user_label(std::string_view label) noexcept {
  if (label.size() != 12) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  for (const char c : label) {
    std::uint64_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint64_t>(c - 'a' + 10);
    } else {
      return std::nullopt;  // the gateway writes lower case
    }
    value = (value << 4U) | digit;
  }
  return value;
}

std::array<char, 12> user_label_text(std::uint64_t value) noexcept {
  static constexpr std::string_view kDigits = "0123456789abcdef";
  std::array<char, 12> out{};
  for (std::size_t i = out.size(); i-- > 0; value >>= 4U) {
    out[i] = kDigits[value & 0xfU];
  }
  return out;
}

}  // namespace sluice::replay
