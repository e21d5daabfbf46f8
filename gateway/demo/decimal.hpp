// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sluice::demo {

/// A whole decimal string, nothing else (no sign, no space, no trailing text); nullopt also on
/// overflow. The one number parser of the demo backend's paths, queries and options. Pure.
[[nodiscard]] inline std::optional<std::uint64_t> parse_decimal(std::string_view text) {
  std::uint64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return std::nullopt;
  }
  return value;
}

}  // namespace sluice::demo
