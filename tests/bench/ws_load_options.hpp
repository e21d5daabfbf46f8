// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>

// The command line of sluice_ws_load (tests/bench/ws_load.cpp). Pure functions; thread-safe.
namespace sluice::bench {

/// `sluice_ws_load --url ws://HOST:PORT/PATH ...`, parsed. `idle` > 0 selects the idle mode.
struct WsLoadOptions {
  std::string host;           // as in the URL (an IPv6 literal without brackets)
  std::string port = "80";    // as in the URL
  std::string target = "/";   // path and query
  unsigned connections = 64;  // load mode: concurrent connections, one message in flight each
  std::size_t size = 1024;    // load mode: message payload bytes
  std::chrono::milliseconds duration{10000};  // load mode: measured time
  std::chrono::milliseconds warmup{2000};     // load mode: unmeasured time before it
  unsigned threads = 1;                       // io_contexts, one thread each
  bool binary = false;                        // binary messages (default: text)
  unsigned idle = 0;                          // idle mode: connections to open and hold
  std::chrono::milliseconds hold{10000};      // idle mode: how long to hold them
  bool help = false;
};

/// Largest message size accepted on the command line (the demo backend's limit).
inline constexpr std::size_t kMaxWsLoadMessage = std::size_t{64} * 1024 * 1024;
/// Upper bounds of --connections / --idle and of --threads.
inline constexpr std::size_t kMaxWsLoadConnections = 1000000;
inline constexpr std::size_t kMaxWsLoadThreads = 256;

/// Either options or the reason argv is unusable (one line, for stderr).
struct WsLoadOptionsResult {
  std::optional<WsLoadOptions> options;
  std::string error;
};

/// Parses argv (argv[0] included). Accepts `--opt value` and `--opt=value`.
[[nodiscard]] WsLoadOptionsResult parse_ws_load_options(std::span<const char* const> argv);

/// The usage text printed for --help and after a usage error.
[[nodiscard]] std::string ws_load_usage();

}  // namespace sluice::bench
