// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sluice::testing {

/// The port of "HOST:PORT" or "[V6]:PORT" (text after the last ':' up to a space or the end);
/// nullopt unless it is a number in 1..65535. Pure; thread-safe.
[[nodiscard]] inline std::optional<std::uint16_t> parse_port(std::string_view host_port) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string_view::npos) {
    return std::nullopt;
  }
  auto digits = host_port.substr(colon + 1);
  digits = digits.substr(0, digits.find_first_of(" \t\r\n"));
  unsigned value = 0;
  const auto* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, value);
  if (digits.empty() || ec != std::errc() || ptr != end || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

/// The value of `key=` in a `key=value key2=value2` log line (up to the next space), or "".
[[nodiscard]] inline std::string_view field_value(std::string_view line, std::string_view key) {
  std::size_t at = 0;
  while ((at = line.find(key, at)) != std::string_view::npos) {
    const bool starts_word = at == 0 || line[at - 1] == ' ';
    if (starts_word && line.substr(at + key.size()).starts_with('=')) {
      const auto value = line.substr(at + key.size() + 1);
      return value.substr(0, value.find(' '));
    }
    at += key.size();
  }
  return {};
}

}  // namespace sluice::testing
