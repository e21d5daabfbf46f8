// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <span>
#include <string>

namespace sluice::app {

/// `sluice --config PATH [--check] [--log-level trace|debug|info|warn|error] [--version]`
/// (docs/behaviour.md "Command line"), parsed.
struct CommandLine {
  std::string config_path;
  bool check = false;
  bool version = false;
  bool help = false;
  std::string log_level = "info";
};

/// Either a command line or the reason it is unusable (one line, for stderr).
struct CommandLineResult {
  std::optional<CommandLine> command_line;
  std::string error;
};

/// Parses argv (argv[0] included). Accepts `--opt value` and `--opt=value`.
[[nodiscard]] CommandLineResult parse_command_line(std::span<const char* const> argv);

/// The usage text printed for --help and after a usage error.
[[nodiscard]] std::string usage();

}  // namespace sluice::app
