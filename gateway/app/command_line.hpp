// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace sluice::app {

/// `sluice --config PATH [--check] [--log-level trace|debug|info|warn|error] [--version]`
/// (docs/behaviour.md "Command line"), parsed.
/// `sluice replay --config NEW.json [--top N] [--format text|json] ACCESS.LOG`
/// (docs/operating.md "What-if replay"), parsed.
struct ReplayArgs {
  std::string config_path;
  std::string log_path;  ///< "-" reads stdin
  std::size_t top = 10;
  bool json = false;
};

struct CommandLine {
  std::optional<ReplayArgs> replay;  ///< set for the `replay` subcommand
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
