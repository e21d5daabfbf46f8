// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/replay/replayer.hpp"

namespace sluice::replay {

/// A malformed line: its number (from 1) and why.
struct BadLine {
  std::uint64_t number = 0;
  std::string reason;
};

/// An access log, as bytes in any pieces, through a Replayer: splits lines (a trailing '\r' is
/// ignored, blank lines are skipped), reads each with scan_log_line() and falls back to
/// parse_log_line_json(), and counts and keeps the first kKeptBadLines malformed lines. Never
/// fails on content. Confined to one thread.
class ReplaySession {
 public:
  static constexpr std::size_t kKeptBadLines = 5;
  /// A longer line is malformed (and not buffered beyond this).
  static constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20U;

  ReplaySession(const config::Config& next, ReplayOptions options)
      : replayer_(next, std::move(options)) {}

  /// The next bytes of the log.
  void feed(std::string_view bytes);
  /// The end of the log: an unterminated last line counts, and every held line is decided.
  void finish();

  [[nodiscard]] std::uint64_t lines() const noexcept { return lines_; }
  [[nodiscard]] const std::vector<BadLine>& bad_lines() const noexcept { return bad_lines_; }
  /// Everything, after finish().
  [[nodiscard]] ReplayReport report() const;

 private:
  void take_line(std::string_view line);
  void malformed(std::string_view reason);

  Replayer replayer_;
  nlohmann::json doc_;   ///< the fallback's document (reused)
  std::string partial_;  ///< a line cut by the end of a piece
  bool overlong_ = false;
  std::uint64_t physical_lines_ = 0;  ///< for line numbers, blank ones included
  std::uint64_t lines_ = 0;
  std::uint64_t malformed_ = 0;
  std::uint64_t slow_parsed_ = 0;
  std::vector<BadLine> bad_lines_;
};

}  // namespace sluice::replay
