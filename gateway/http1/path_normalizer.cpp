// SPDX-License-Identifier: Apache-2.0
#include "gateway/http1/path_normalizer.hpp"

#include <array>
#include <cstdint>

namespace sluice::http1 {
namespace {

/// RFC 3986 §2.3: ALPHA / DIGIT / "-" / "." / "_" / "~".
bool unreserved(unsigned char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

/// True when the segment starting at `at` (just after a '/') is "." or "..".
bool dot_segment_at(std::string_view s, std::size_t at) noexcept {
  const auto end_of_segment = [&](std::size_t i) { return i >= s.size() || s[i] == '/'; };
  if (at >= s.size() || s[at] != '.') {
    return false;
  }
  return end_of_segment(at + 1) || (s[at + 1] == '.' && end_of_segment(at + 2));
}

/// One scan: nothing to decode, merge or remove.
bool already_normal(std::string_view path, bool merge_slashes) noexcept {
  for (std::size_t i = 0; i < path.size(); ++i) {
    const char c = path[i];
    if (c == '%') {
      return false;
    }
    if (c == '/') {
      if (merge_slashes && i + 1 < path.size() && path[i + 1] == '/') {
        return false;
      }
      if (dot_segment_at(path, i + 1)) {
        return false;
      }
    }
  }
  return true;
}

/// Steps 1 and 2 into `out`; false on a bad percent-encoding.
bool decode_and_merge(std::string_view path, bool merge_slashes, std::string& out) {
  static constexpr std::array<char, 16> kHex{'0', '1', '2', '3', '4', '5', '6', '7',
                                             '8', '9', 'A', 'B', 'C', 'D', 'E', 'F'};
  out.clear();
  out.reserve(path.size());
  for (std::size_t i = 0; i < path.size(); ++i) {
    const char c = path[i];
    if (c == '%') {
      if (i + 2 >= path.size()) {
        return false;  // a '%' needs two hex digits after it
      }
      const int hi = hex_digit_value(path[i + 1]);
      const int lo = hex_digit_value(path[i + 2]);
      if (hi < 0 || lo < 0) {
        return false;
      }
      const auto value = static_cast<unsigned char>(hi * 16 + lo);
      if (unreserved(value)) {
        out.push_back(static_cast<char>(value));
      } else {
        out.push_back('%');
        out.push_back(kHex[static_cast<std::size_t>(hi)]);
        out.push_back(kHex[static_cast<std::size_t>(lo)]);
      }
      i += 2;
      continue;
    }
    if (c == '/' && merge_slashes && !out.empty() && out.back() == '/') {
      continue;
    }
    out.push_back(c);
  }
  return true;
}

/// Step 3 in place (RFC 3986 §5.2.4 on an absolute path: every output segment starts with '/',
/// and the output never outgrows what was read, so one buffer serves both). False when a ".."
/// climbs above the root.
bool remove_dot_segments(std::string& s) {
  const std::string_view in(s);
  std::size_t r = 0;  // read position
  std::size_t w = 0;  // output: s[0, w)
  const auto pop = [&]() -> bool {
    if (w == 0) {
      return false;  // already at the root
    }
    w = std::string_view(s.data(), w).rfind('/');
    return true;
  };
  while (r < in.size()) {
    if (in.compare(r, 3, "/./") == 0) {
      r += 2;
    } else if (in.compare(r, std::string_view::npos, "/.") == 0) {
      s[w++] = '/';
      r = in.size();
    } else if (in.compare(r, 4, "/../") == 0) {
      if (!pop()) {
        return false;
      }
      r += 3;
    } else if (in.compare(r, std::string_view::npos, "/..") == 0) {
      if (!pop()) {
        return false;
      }
      s[w++] = '/';
      r = in.size();
    } else {
      s[w++] = in[r++];  // the '/' and the segment after it
      while (r < in.size() && in[r] != '/') {
        s[w++] = in[r++];
      }
    }
  }
  s.resize(w);
  return true;
}

}  // namespace

int hex_digit_value(char c) noexcept {
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

PathStatus normalize_path(std::string_view path, bool merge_slashes, std::string& out) {
  if (path.empty() || path.front() != '/') {
    return PathStatus::kBadEncoding;
  }
  if (already_normal(path, merge_slashes)) {
    return PathStatus::kUnchanged;
  }
  if (!decode_and_merge(path, merge_slashes, out)) {
    return PathStatus::kBadEncoding;
  }
  if (!remove_dot_segments(out)) {
    return PathStatus::kAboveRoot;
  }
  return out == path ? PathStatus::kUnchanged : PathStatus::kRewritten;
}

std::string normalized(std::string_view path, bool merge_slashes) {
  std::string out;
  switch (normalize_path(path, merge_slashes, out)) {
    case PathStatus::kUnchanged:
      return std::string(path);
    case PathStatus::kRewritten:
      return out;
    case PathStatus::kAboveRoot:
    case PathStatus::kBadEncoding:
      break;
  }
  return {};
}

}  // namespace sluice::http1
