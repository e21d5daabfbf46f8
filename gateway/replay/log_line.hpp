// SPDX-License-Identifier: Apache-2.0
// Reading one access log line (docs/access-log.md) for `sluice replay`
// (docs/decisions/0015-what-if-replay.md): a fast scanner for the flat JSON object the gateway
// writes, and nlohmann::json for every line the scanner does not accept. Stateless functions:
// thread-safe.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::replay {

/// The fields of an access log line a replay reads. The views point into the line (fast scan)
/// or into the parsed document (fallback): they live as long as that.
struct LogLine {
  std::string_view ts;                   ///< "YYYY-MM-DDTHH:MM:SS.mmmZ"
  std::string_view route;                ///< "none" when the request was not routed
  std::optional<std::string_view> user;  ///< the 12-hex-digit label; nullopt for null
  std::string_view limit;                ///< allowed | limited | shadow_limited | none
  std::string_view method;
  std::string_view path;
  std::optional<std::string_view> host;  ///< nullopt for null

  bool operator==(const LogLine&) const = default;
};

/// The fast path, allocation-free: accepts a line only when it is one flat JSON object (no
/// nested object or array), ASCII, with `ts`, `route`, `user`, `limit`, `method`, `path` and
/// `host` each present once, unescaped and of their type (`user` and `host` may be null), and
/// every other value a valid JSON string, a number without exponent of at most 24 characters,
/// true, false or null. Whatever it accepts, nlohmann::json parses to the same fields (the
/// unit test and the `access_log_line` fuzz target check it). False: use parse_log_line_json.
[[nodiscard]] bool scan_log_line(std::string_view line, LogLine& out) noexcept;

/// The slow path: nlohmann::json parses the line into `doc` (whose strings `out` then views).
/// `method`, `path` and `host` may be missing (empty, nullopt). Returns an empty reason on
/// success, else why the line is unusable (for the malformed-lines listing).
[[nodiscard]] std::string parse_log_line_json(std::string_view line, nlohmann::json& doc,
                                              LogLine& out);

/// Milliseconds since the Unix epoch (UTC).
using LogTime = std::chrono::sys_time<std::chrono::milliseconds>;

/// Parses the `ts` form the access log writes ("2026-11-25T02:31:13.952Z"), exactly; nullopt
/// for anything else (another form, an impossible date).
[[nodiscard]] std::optional<LogTime> parse_log_time(std::string_view text) noexcept;

/// The `ts` form of `t`.
[[nodiscard]] std::string format_log_time(LogTime t);

/// A user label (12 lower-case hex digits) as a number, and back; nullopt if it is not one.
[[nodiscard]] std::optional<std::uint64_t> parse_user_label(std::string_view label) noexcept;
[[nodiscard]] std::array<char, 12> user_label_text(std::uint64_t value) noexcept;

}  // namespace sluice::replay
