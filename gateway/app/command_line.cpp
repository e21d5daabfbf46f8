// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/command_line.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace sluice::app {
namespace {

constexpr std::array<std::string_view, 5> kLogLevels{"trace", "debug", "info", "warn", "error"};

/// Splits `--name=value` into name and value; `--name` has no value.
struct Option {
  std::string_view name;
  std::optional<std::string_view> inline_value;
};

Option split(std::string_view arg) {
  const auto eq = arg.find('=');
  if (eq == std::string_view::npos) {
    return {arg, std::nullopt};
  }
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

}  // namespace

CommandLineResult parse_command_line(std::span<const char* const> argv) {
  CommandLine cl;
  bool have_config = false;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const Option opt = split(argv[i]);
    const bool takes_value = opt.name == "--config" || opt.name == "--log-level";
    if (!takes_value && opt.inline_value) {
      return {std::nullopt, std::string(opt.name) + " takes no value"};
    }
    std::string_view value;
    if (takes_value) {
      if (opt.inline_value) {
        value = *opt.inline_value;
      } else if (i + 1 < argv.size()) {
        value = argv[++i];
      } else {
        return {std::nullopt, std::string(opt.name) + " needs a value"};
      }
    }
    if (opt.name == "--config") {
      if (have_config) {
        return {std::nullopt, "--config given twice"};
      }
      if (value.empty()) {
        return {std::nullopt, "--config needs a path"};
      }
      cl.config_path = value;
      have_config = true;
    } else if (opt.name == "--log-level") {
      if (std::find(kLogLevels.begin(), kLogLevels.end(), value) == kLogLevels.end()) {
        return {std::nullopt, "--log-level must be one of trace, debug, info, warn, error"};
      }
      cl.log_level = value;
    } else if (opt.name == "--check") {
      cl.check = true;
    } else if (opt.name == "--version") {
      cl.version = true;
    } else if (opt.name == "--help" || opt.name == "-h") {
      cl.help = true;
    } else {
      return {std::nullopt, "unknown argument: " + std::string(argv[i])};
    }
  }
  if (!have_config && !cl.version && !cl.help) {
    return {std::nullopt, "--config PATH is required"};
  }
  return {cl, {}};
}

std::string usage() {
  return "usage: sluice --config PATH [--check] [--log-level trace|debug|info|warn|error] "
         "[--version]\n"
         "  --config PATH   the JSON config file (see conf/sluice.json)\n"
         "  --check         validate the config, print \"config ok\" or every problem, and exit\n"
         "  --log-level L   minimum level logged (default info)\n"
         "  --version       print the version and exit\n";
}

}  // namespace sluice::app
