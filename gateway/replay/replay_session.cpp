// SPDX-License-Identifier: Apache-2.0
#include "gateway/replay/replay_session.hpp"

namespace sluice::replay {

void ReplaySession::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    const auto newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      if (overlong_) {
        return;  // dropping the rest of a line too long to keep
      }
      if (partial_.size() + bytes.size() > kMaxLineBytes) {
        overlong_ = true;
        partial_.clear();
      } else {
        partial_.append(bytes);
      }
      return;
    }
    const std::string_view piece = bytes.substr(0, newline);
    bytes.remove_prefix(newline + 1);
    if (!overlong_ && partial_.size() + piece.size() > kMaxLineBytes) {
      overlong_ = true;
    }
    if (overlong_) {
      overlong_ = false;
      partial_.clear();
      ++physical_lines_;
      ++lines_;
      malformed("longer than 1 MiB");
    } else if (partial_.empty()) {
      take_line(piece);
    } else {
      partial_.append(piece);
      take_line(partial_);
      partial_.clear();
    }
  }
}

void ReplaySession::finish() {
  if (overlong_) {
    overlong_ = false;
    ++physical_lines_;
    ++lines_;
    malformed("longer than 1 MiB");
  } else if (!partial_.empty()) {
    take_line(partial_);
  }
  partial_.clear();
  replayer_.finish();
}

ReplayReport ReplaySession::report() const {
  ReplayReport report = replayer_.report();
  report.lines = lines_;
  report.malformed = malformed_;
  report.slow_parsed = slow_parsed_;
  return report;
}

void ReplaySession::take_line(std::string_view line) {
  ++physical_lines_;
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  if (line.find_first_not_of(" \t") == std::string_view::npos) {
    return;  // blank
  }
  ++lines_;
  LogLine parsed;
  if (!scan_log_line(line, parsed)) {
    ++slow_parsed_;
    const std::string reason = parse_log_line_json(line, doc_, parsed);
    if (!reason.empty()) {
      malformed(reason);
      return;
    }
  }
  const std::string_view reason = replayer_.add(parsed);
  if (!reason.empty()) {
    malformed(reason);
  }
}

void ReplaySession::malformed(std::string_view reason) {
  ++malformed_;
  if (bad_lines_.size() < kKeptBadLines) {
    bad_lines_.push_back(BadLine{.number = physical_lines_, .reason = std::string(reason)});
  }
}

}  // namespace sluice::replay
