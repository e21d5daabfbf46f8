// SPDX-License-Identifier: Apache-2.0
#include "gateway/demo/demo_options.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/ip/address.hpp>
#include <string_view>

#include "gateway/demo/decimal.hpp"

namespace sluice::demo {
namespace {

constexpr std::array<std::string_view, 9> kOptionNames = {
    "--address",     "--port",     "--threads",  "--health",    "--fail-percent",
    "--fail-status", "--delay-ms", "--capacity", "--service-ms"};

/// Parses a whole decimal string into [min, max]; nullopt otherwise.
std::optional<unsigned> parse_number(std::string_view text, unsigned min, unsigned max) {
  const auto value = parse_decimal(text);
  if (!value || *value < min || *value > max) {
    return std::nullopt;
  }
  return static_cast<unsigned>(*value);
}

/// Applies a fault or capacity option (`--fail-percent` is /control's `fail_percent`,
/// `--service-ms` its `service_ms`, and so on); returns an error message or "".
std::string apply_fault(FaultSettings& faults, std::string_view name, std::string_view value) {
  std::string parameter(name.substr(2));
  std::replace(parameter.begin(), parameter.end(), '-', '_');
  FaultUpdate update;
  if (set_parameter(update, parameter, value) != ParameterError::kNone) {
    return std::string(name) + " must be " + std::string(expected_values(parameter)) + ", got '" +
           std::string(value) + "'";
  }
  faults = update.applied_to(faults);
  return {};
}

/// Applies one `--name value` pair; returns an error message or "".
std::string apply(DemoOptions& options, std::string_view name, std::string_view value) {
  if (name == "--address") {
    boost::system::error_code ec;
    boost::asio::ip::make_address(std::string(value), ec);
    if (ec) {
      return "--address must be an IPv4 or IPv6 address, got '" + std::string(value) + "'";
    }
    options.address = value;
  } else if (name == "--port") {
    const auto port = parse_number(value, 0, 65535);
    if (!port) {
      return "--port must be between 0 and 65535, got '" + std::string(value) + "'";
    }
    options.port = static_cast<std::uint16_t>(*port);
  } else if (name == "--threads") {
    const auto threads = parse_number(value, 1, kMaxThreads);
    if (!threads) {
      return "--threads must be between 1 and " + std::to_string(kMaxThreads) + ", got '" +
             std::string(value) + "'";
    }
    options.threads = *threads;
  } else {
    return apply_fault(options.faults, name, value);
  }
  return {};
}

}  // namespace

DemoOptionsResult parse_demo_options(std::span<const char* const> argv) {
  DemoOptions options;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      continue;
    }
    const auto eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    if (std::find(kOptionNames.begin(), kOptionNames.end(), name) == kOptionNames.end()) {
      return {std::nullopt, "unknown argument: " + std::string(arg)};
    }
    std::string_view value;
    if (eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argv.size()) {
      value = argv[++i];
    } else {
      return {std::nullopt, std::string(name) + " needs a value"};
    }
    if (auto error = apply(options, name, value); !error.empty()) {
      return {std::nullopt, std::move(error)};
    }
  }
  return {options, {}};
}

std::string demo_usage() {
  return "usage: sluice-demo-backend [--address 127.0.0.1] [--port 0] [--threads 1]\n"
         "                           [--health up|down] [--fail-percent 0..100]\n"
         "                           [--fail-status 503|reset] [--delay-ms 0..600000]\n"
         "                           [--capacity 0..100000] [--service-ms 0..600000]\n"
         "  --capacity C: at most C requests served at once, the rest queue (FIFO, one queue\n"
         "    for all threads); 0 = unlimited. Not /healthz, /control or WebSocket upgrades.\n"
         "  --service-ms S: each such request holds its slot S ms (plus any delay) before its\n"
         "    answer. POST /control?capacity=C&service_ms=S changes both live.\n";
}

}  // namespace sluice::demo
