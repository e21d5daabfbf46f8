// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/command_line.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <string_view>

namespace sluice::app {
namespace {

constexpr std::array<std::string_view, 5> kLogLevels{"trace", "debug", "info", "warn", "error"};
constexpr std::size_t kMaxReplayTop = 1000;

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

/// The value of option `opt` at argv[i] (inline, or the next argument, which it consumes).
std::optional<std::string> option_value(std::span<const char* const> argv, std::size_t& i,
                                        const Option& opt, std::string_view& value) {
  if (opt.inline_value) {
    value = *opt.inline_value;
  } else if (i + 1 < argv.size()) {
    value = argv[++i];
  } else {
    return std::string(opt.name) + " needs a value";
  }
  return std::nullopt;
}

/// One option of `sluice replay` into `args` (or `cl.help`); an error text when it is unusable.
std::optional<std::string> replay_option(std::span<const char* const> argv, std::size_t& i,
                                         CommandLine& cl, ReplayArgs& args) {
  const Option opt = split(argv[i]);
  if (opt.name == "--help" || opt.name == "-h") {
    cl.help = true;
    return std::nullopt;
  }
  if (opt.name != "--config" && opt.name != "--top" && opt.name != "--format") {
    return "unknown argument: " + std::string(argv[i]);
  }
  std::string_view value;
  if (auto error = option_value(argv, i, opt, value)) {
    return error;
  }
  if (opt.name == "--config") {
    if (!args.config_path.empty() || value.empty()) {
      return std::string(value.empty() ? "--config needs a path" : "--config given twice");
    }
    args.config_path = value;
  } else if (opt.name == "--top") {
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || n > kMaxReplayTop) {
      return "--top must be a number from 0 to " + std::to_string(kMaxReplayTop);
    }
    args.top = n;
  } else if (value == "text" || value == "json") {
    args.json = value == "json";
  } else {
    return std::string("--format must be text or json");
  }
  return std::nullopt;
}

/// `sluice replay ...`: argv[1] is "replay".
CommandLineResult parse_replay(std::span<const char* const> argv) {
  CommandLine cl;
  ReplayArgs args;
  bool have_log = false;
  for (std::size_t i = 2; i < argv.size(); ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-" || !arg.starts_with('-')) {
      if (have_log) {
        return {std::nullopt, "replay takes one access log (given: " + args.log_path + ", " +
                                  std::string(arg) + ")"};
      }
      args.log_path = arg;
      have_log = true;
    } else if (auto error = replay_option(argv, i, cl, args)) {
      return {std::nullopt, *error};
    }
  }
  if (!cl.help) {
    if (args.config_path.empty()) {
      return {std::nullopt, "replay: --config NEW.json is required"};
    }
    if (!have_log) {
      return {std::nullopt,
              "replay: the access log to replay is required (a file, or - for stdin)"};
    }
  }
  cl.config_path = args.config_path;
  cl.replay = std::move(args);
  return {std::move(cl), {}};
}

}  // namespace

CommandLineResult parse_command_line(std::span<const char* const> argv) {
  if (argv.size() > 1 && std::string_view(argv[1]) == "replay") {
    return parse_replay(argv);
  }
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
         "       sluice replay --config NEW.json [--top N] [--format text|json] ACCESS.LOG\n"
         "  --config PATH   the JSON config file (see conf/sluice.json)\n"
         "  --check         validate the config, print \"config ok\" or every problem, and exit\n"
         "  --log-level L   minimum level logged (default info)\n"
         "  --version       print the version and exit\n"
         "  replay          re-decide ACCESS.LOG's requests (- reads stdin) under NEW.json's\n"
         "                  limits; print per policy allowed and limited then and now, and the\n"
         "                  N users most affected (default 10)\n";
}

}  // namespace sluice::app
