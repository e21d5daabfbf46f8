// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::admin {

/// The segments of a request target's path, each percent-decoded (RFC 3986 §2.1), with the query
/// dropped: "/admin/limits/std/keys/a%2Fb?x=1" -> {"admin", "limits", "std", "keys", "a/b"}.
/// An empty segment (as in "/a//b" or a trailing "/") is kept as "". std::nullopt when the target
/// does not start with "/", a "%" is not followed by two hex digits, or a decoded segment is not
/// well-formed UTF-8 (segments become JSON strings). Stateless; thread-safe.
[[nodiscard]] std::optional<std::vector<std::string>> path_segments(std::string_view target);

/// The value of query parameter `name` in a request target ("/a?dry_run=true&x" -> "true" for
/// "dry_run"; "" for "x"), percent-decoded ('+' stays '+'); the first one when it repeats.
/// std::nullopt when absent or its value's percent-encoding is malformed. Stateless;
/// thread-safe.
[[nodiscard]] std::optional<std::string> query_parameter(std::string_view target,
                                                         std::string_view name);

}  // namespace sluice::admin
