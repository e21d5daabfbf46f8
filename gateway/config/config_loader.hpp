// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/config/problems.hpp"

// Entry points of the config module: JSON in, a validated Config or every problem out.
// All functions are thread-safe (no shared state) and never throw: failures, including an
// unreadable file and malformed JSON, come back as problems.
namespace sluice::config {

/// A validated Config, or the problems that prevented one (never both, never neither).
struct LoadResult {
  std::optional<Config> config;
  std::vector<Problem> problems;

  [[nodiscard]] bool ok() const { return config.has_value(); }
};

/// Validates a parsed document against docs/behaviour.md "Configuration" and applies the defaults.
/// Reports every problem, in document-schema order, each once at its most specific path. `config`
/// is set iff `problems` is empty.
LoadResult parse_config(const nlohmann::json& document);
/// The same for a document with its key order kept, with the same Config and problems. The
/// `overrides` section, which grows to thousands of members, is read in place when every entry
/// in it is valid, not copied member by member into a nlohmann::json first (docs/fleet.md,
/// "Writes").
LoadResult parse_config(const nlohmann::ordered_json& document);

/// JSON text parsed with the key order kept. A syntax error is one problem at "(root)":
/// "invalid JSON at line L, column C: <detail>" (lines and columns count from 1), and no `json`.
/// A key repeated within one object (JSON parsers keep only the last) is a problem too:
/// "PATH: duplicate key"; then `json` is still set.
struct JsonText {
  std::optional<nlohmann::ordered_json> json;
  std::vector<Problem> problems;
};
JsonText parse_json_text(std::string_view text);

/// `first` followed by result's problems; a failure unless both are empty.
LoadResult merge_problems(std::vector<Problem> first, LoadResult result);

/// Parses JSON text (parse_json_text), then as parse_config; the syntax and duplicate-key
/// problems come first.
LoadResult parse_config_text(std::string_view text);

/// Reads and parses a file. An unreadable file is one problem whose path is the file's path:
/// "cannot read: <system error text>".
LoadResult load_config_file(const std::filesystem::path& path);

/// Reads a whole file into `text`; on failure, the problem load_config_file reports.
std::optional<Problem> read_config_file(const std::filesystem::path& path, std::string& text);

}  // namespace sluice::config
