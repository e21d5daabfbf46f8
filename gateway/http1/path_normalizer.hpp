// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>

// Request-path normalization: what is rewritten, in which order, what is refused and why is
// described in docs/paths.md. Pure functions; no I/O, no allocation unless a path changes (or
// normalized() is used).
namespace sluice::http1 {

/// The outcome of normalize_path().
enum class PathStatus {
  kUnchanged,    // the path is already normal; `out` was not touched
  kRewritten,    // `out` holds the normal form (different from the path)
  kAboveRoot,    // a ".." segment would climb above "/": answer 400
  kBadEncoding,  // a "%" without two hex digits after it, or no leading "/": answer 400
};

/// Normalizes the path of an origin-form request target (no query: the caller splits at '?' and
/// handles "*" and absolute-form before calling), in this order (docs/paths.md):
///   1. percent-encoded unreserved characters (ALPHA DIGIT - . _ ~) are decoded; every other
///      percent-encoding stays, with upper-case hex digits; `%2F`, `%5C` and `%00` therefore
///      stay encoded and never split a segment;
///   2. with `merge_slashes`, every run of "/" becomes one "/";
///   3. "." and ".." segments are removed as RFC 3986 §5.2.4 does, except that a ".." above
///      "/" is refused (kAboveRoot); a trailing "/." or "/.." leaves a trailing "/".
/// When both kBadEncoding and kAboveRoot apply, the result is kBadEncoding (step 1 comes first).
/// The normal form is never longer than `path`. `out` is written for kRewritten (it then holds
/// exactly the normal form) and may be written on an error (its content is unspecified). Its
/// capacity is reused: a caller that keeps one string per connection allocates only for a path
/// longer than any before. A path with no "%", no "//" and no "." or ".." segment costs one scan
/// and no writes. Stateless; thread-safe. `path` must not alias `out`.
[[nodiscard]] PathStatus normalize_path(std::string_view path, bool merge_slashes,
                                        std::string& out);

/// "unchanged", "rewritten", "above_root", "bad_encoding".
[[nodiscard]] std::string_view to_string(PathStatus status);

/// The value of hex digit `c` (either case), or -1.
[[nodiscard]] int hex_digit_value(char c) noexcept;

/// The normal form of `path`, or the path itself when it is normal; empty when refused.
/// (Config validation and tests; the data path uses normalize_path() with a reused string.)
[[nodiscard]] std::string normalized(std::string_view path, bool merge_slashes);

}  // namespace sluice::http1
