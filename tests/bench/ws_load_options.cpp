// SPDX-License-Identifier: Apache-2.0
#include "tests/bench/ws_load_options.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <string_view>
#include <utility>

namespace sluice::bench {
namespace {

/// A whole decimal string in [min, max]; nullopt otherwise.
std::optional<std::size_t> parse_count(std::string_view text, std::size_t min, std::size_t max) {
  std::size_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    return std::nullopt;
  }
  return value;
}

/// Seconds, fractions allowed ("2", "0.5"), in [0, 1 day]; nullopt otherwise.
std::optional<std::chrono::milliseconds> parse_seconds(std::string_view text) {
  double value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || !(value >= 0) || value > 86400) {
    return std::nullopt;
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(value * 1000));
}

/// `ws://HOST[:PORT][/PATH]`, HOST maybe a bracketed IPv6 literal. Returns an error or "".
std::string apply_url(WsLoadOptions& options, std::string_view url) {
  constexpr std::string_view kScheme = "ws://";
  if (!url.starts_with(kScheme)) {
    return "--url must start with ws:// (wss is not supported), got '" + std::string(url) + "'";
  }
  std::string_view rest = url.substr(kScheme.size());
  const auto slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  options.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  std::string_view host = authority;
  std::string_view port = "80";
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) {
      return "--url has an unterminated IPv6 literal";
    }
    host = authority.substr(1, close - 1);
    if (authority.size() > close + 1) {
      if (authority[close + 1] != ':') {
        return "--url has junk after the IPv6 literal";
      }
      port = authority.substr(close + 2);
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty() || !parse_count(port, 1, 65535)) {
    return "--url needs a host and a port between 1 and 65535, got '" + std::string(url) + "'";
  }
  options.host = host;
  options.port = port;
  return {};
}

/// Applies one `--name value` pair; returns an error message or "".
std::string apply(WsLoadOptions& options, std::string_view name, std::string_view value) {
  const auto bad = [&](std::string_view expected) {
    return std::string(name) + " must be " + std::string(expected) + ", got '" +
           std::string(value) + "'";
  };
  if (name == "--url") {
    return apply_url(options, value);
  }
  if (name == "--duration" || name == "--warmup" || name == "--hold") {
    const auto seconds = parse_seconds(value);
    if (!seconds) {
      return bad("a number of seconds");
    }
    if (name == "--duration") {
      options.duration = *seconds;
    } else if (name == "--warmup") {
      options.warmup = *seconds;
    } else {
      options.hold = *seconds;
    }
    return {};
  }
  if (name == "--size") {
    const auto size = parse_count(value, 0, kMaxWsLoadMessage);
    if (!size) {
      return bad("between 0 and " + std::to_string(kMaxWsLoadMessage));
    }
    options.size = *size;
    return {};
  }
  // --connections, --threads or --idle
  const std::size_t min = name == "--idle" ? 0 : 1;
  const std::size_t max = name == "--threads" ? kMaxWsLoadThreads : kMaxWsLoadConnections;
  const auto count = parse_count(value, min, max);
  if (!count) {
    return bad("between " + std::to_string(min) + " and " + std::to_string(max));
  }
  unsigned& field = name == "--connections" ? options.connections
                    : name == "--threads"   ? options.threads
                                            : options.idle;
  field = static_cast<unsigned>(*count);
  return {};
}

}  // namespace

WsLoadOptionsResult parse_ws_load_options(std::span<const char* const> argv) {
  WsLoadOptions options;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      continue;
    }
    if (arg == "--binary") {
      options.binary = true;
      continue;
    }
    const auto eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    static constexpr std::array<std::string_view, 8> kNames = {
        "--url",    "--connections", "--size", "--duration",
        "--warmup", "--threads",     "--idle", "--hold"};
    if (std::find(kNames.begin(), kNames.end(), name) == kNames.end()) {
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
  if (!options.help && options.host.empty()) {
    return {std::nullopt, "--url is required"};
  }
  if (!options.help && options.idle == 0 && options.duration.count() == 0) {
    return {std::nullopt, "--duration must be above 0"};
  }
  return {options, {}};
}

std::string ws_load_usage() {
  return "usage: sluice_ws_load --url ws://HOST:PORT/PATH [--connections 64] [--size 1024]\n"
         "                      [--duration 10] [--warmup 2] [--threads 1] [--binary]\n"
         "       sluice_ws_load --url ws://HOST:PORT/PATH --idle N [--hold 10] [--threads 1]\n"
         "Load: each connection sends a message and waits for its echo, then the next;\n"
         "prints one JSON line: connections, size, messages, seconds, messages_per_sec,\n"
         "mib_per_sec (payload one way), p50_us, p99_us, errors (warm-up messages not\n"
         "counted), messages_total (every echo, the warm-up's included).\n"
         "Idle: opens N connections, one echo each, prints `ready ...` on stderr, holds them\n"
         "for --hold seconds, then prints {\"idle_open\":..,\"failed\":..,...}.\n"
         "Exits 1 on any error or when nothing completed, 2 on a usage error.\n";
}

}  // namespace sluice::bench
