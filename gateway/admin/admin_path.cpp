// SPDX-License-Identifier: Apache-2.0
#include "gateway/admin/admin_path.hpp"

namespace sluice::admin {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) {
      return std::nullopt;
    }
    const int high = hex_value(text[i + 1]);
    const int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

}  // namespace

std::optional<std::vector<std::string>> path_segments(std::string_view target) {
  if (const auto query = target.find('?'); query != std::string_view::npos) {
    target = target.substr(0, query);
  }
  if (target.empty() || target.front() != '/') {
    return std::nullopt;
  }
  target.remove_prefix(1);
  std::vector<std::string> segments;
  for (;;) {
    const auto slash = target.find('/');
    auto decoded = percent_decode(target.substr(0, slash));
    if (!decoded) {
      return std::nullopt;
    }
    segments.push_back(std::move(*decoded));
    if (slash == std::string_view::npos) {
      return segments;
    }
    target.remove_prefix(slash + 1);
  }
}

}  // namespace sluice::admin
