// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http1/path_normalizer.hpp"

namespace sluice::testing {

/// The rules of docs/paths.md written the obvious way: one pass per rule, in the documented
/// order, over a std::vector<std::string> of segments. The unit tests use it as an oracle for
/// http1::normalize_path and the benchmark as the baseline. Allocates freely. Stateless;
/// thread-safe.
inline http1::PathStatus naive_normalize_path(std::string_view path, bool merge_slashes,
                                              std::string& out) {
  using http1::PathStatus;
  if (path.empty() || path.front() != '/') {
    return PathStatus::kBadEncoding;
  }
  // 1. Percent-encodings: decode the unreserved ones, upper-case the hex of the rest.
  const std::string hex = "0123456789ABCDEF";
  const auto value = [&](char c) {
    const auto at = hex.find(static_cast<char>(c >= 'a' && c <= 'f' ? c - 'a' + 'A' : c));
    return at == std::string::npos ? -1 : static_cast<int>(at);
  };
  std::string decoded;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '%') {
      decoded += path[i];
      continue;
    }
    if (i + 2 >= path.size() || value(path[i + 1]) < 0 || value(path[i + 2]) < 0) {
      return PathStatus::kBadEncoding;
    }
    const char c = static_cast<char>(value(path[i + 1]) * 16 + value(path[i + 2]));
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') ||
                            std::string_view("-._~").find(c) != std::string_view::npos;
    decoded += unreserved ? std::string(1, c)
                          : std::string{'%', hex[value(path[i + 1])], hex[value(path[i + 2])]};
    i += 2;
  }
  // 2. Runs of "/" become one "/".
  if (merge_slashes) {
    std::string merged;
    for (const char c : decoded) {
      if (c != '/' || merged.empty() || merged.back() != '/') {
        merged += c;
      }
    }
    decoded = merged;
  }
  // 3. Dot segments, on the segments between the literal "/"s.
  std::vector<std::string> segments;
  std::string current;
  for (std::size_t i = 1; i <= decoded.size(); ++i) {
    if (i == decoded.size() || decoded[i] == '/') {
      segments.push_back(current);
      current.clear();
    } else {
      current += decoded[i];
    }
  }
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const bool is_last = i + 1 == segments.size();
    if (segments[i] == "..") {
      if (kept.empty()) {
        return PathStatus::kAboveRoot;
      }
      kept.pop_back();
    }
    if (segments[i] == "." || segments[i] == "..") {
      if (is_last) {
        kept.emplace_back();
      }
      continue;
    }
    kept.push_back(segments[i]);
  }
  std::string joined;
  for (const auto& segment : kept) {
    joined += "/" + segment;
  }
  if (joined == path) {
    return PathStatus::kUnchanged;
  }
  out = joined;
  return PathStatus::kRewritten;
}

}  // namespace sluice::testing
