// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "gateway/demo/fault_state.hpp"

namespace sluice::demo {

/// `sluice-demo-backend [--address 127.0.0.1] [--port 0] [--threads 1] [--health up]
/// [--fail-percent 0] [--fail-status 503] [--delay-ms 0] [--capacity 0] [--service-ms 0]`,
/// parsed. The last six are the initial fault settings, with the values `POST /control` takes
/// for health, fail_percent, fail_status, delay_ms, capacity and service_ms.
struct DemoOptions {
  std::string address = "127.0.0.1";  // an IPv4 or IPv6 literal
  std::uint16_t port = 0;             // 0 = ephemeral
  unsigned threads = 1;               // 1..kMaxThreads io_contexts, one acceptor each
  FaultSettings faults;               // healthy, no failures, no delay, unlimited capacity
  bool help = false;
};

inline constexpr unsigned kMaxThreads = 256;

/// Either options or the reason argv is unusable (one line, for stderr).
struct DemoOptionsResult {
  std::optional<DemoOptions> options;
  std::string error;
};

/// Parses argv (argv[0] included). Accepts `--opt value` and `--opt=value`.
[[nodiscard]] DemoOptionsResult parse_demo_options(std::span<const char* const> argv);

/// The usage text printed for --help and after a usage error.
[[nodiscard]] std::string demo_usage();

}  // namespace sluice::demo
