// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>

namespace sluice::http1 {

/// What normalize_path() found.
enum class PathStatus {
  kUnchanged,    ///< already normal: use the path as it is (`out` untouched)
  kRewritten,    ///< the normal form is in `out`
  kAboveRoot,    ///< a `..` climbs above `/`: answer 400
  kBadEncoding,  ///< a `%` without two hex digits, or no leading `/`: answer 400
};

/// Normalizes the path of an origin-form request target (no query: the caller splits at `?`)
/// so that routing, limits and the upstream all see one spelling of a resource
/// (docs/paths.md), in this order:
///  1. percent-encoded unreserved characters (ALPHA DIGIT - . _ ~, RFC 3986 §2.3) are decoded;
///     every other percent-encoding stays, its hex digits upper-cased (RFC 3986 §6.2.2.1), so
///     `%2F`, `%5C` and `%00` never split or end a segment;
///  2. with `merge_slashes`, runs of `/` become one;
///  3. `.` and `..` segments are removed (RFC 3986 §5.2.4), but a `..` that would climb above
///     `/` is refused instead of dropped.
/// The normal form is never longer than `path`. A path with no `%`, no `//` and no dot segment
/// is recognised in one scan with no writes. `out` keeps its capacity across calls.
[[nodiscard]] PathStatus normalize_path(std::string_view path, bool merge_slashes,
                                        std::string& out);

/// The value of hex digit `c` (either case), or -1.
[[nodiscard]] int hex_digit_value(char c) noexcept;

/// The normal form of `path`, or the path itself when it is normal; empty when refused.
/// (Config validation and tests; the data path uses normalize_path().)
[[nodiscard]] std::string normalized(std::string_view path, bool merge_slashes);

}  // namespace sluice::http1
