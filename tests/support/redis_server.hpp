// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/child_process.hpp"
#include "tests/support/timeouts.hpp"

namespace sluice::testing {

/// A real `redis-server` (path from the SLUICE_REDIS_SERVER compile definition that
/// sluice_test_harness carries) for tests, on 127.0.0.1 and a free port, without persistence and
/// with DEBUG enabled (DEBUG SLEEP makes it slow on purpose). A cluster node
/// ("--cluster-enabled") gets a free port for its cluster bus as well. The constructor returns
/// once it accepts connections, trying new ports when another process took one first, and throws
/// std::runtime_error (with its output) otherwise. stop() and
/// start() kill and restart it on the same port, as an outage does.
///
/// Thread-safety: confined to the test's thread, except command(), which opens its own
/// connection. The destructor stops the server.
class RedisServer {
 public:
  /// `extra_args` go to redis-server as given (e.g. {"--requirepass", "secret"}).
  explicit RedisServer(std::vector<std::string> extra_args = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  /// The cluster bus' port (CLUSTER MEET needs it); 0 unless a cluster node.
  [[nodiscard]] std::uint16_t cluster_bus_port() const noexcept { return cluster_bus_port_; }

  /// SIGKILL: gone at once, like a crashed or unreachable Redis.
  void stop();
  /// Starts it again on the same port (empty: nothing was persisted).
  void start();
  [[nodiscard]] bool running() const noexcept { return process_ != nullptr; }

  /// Runs one command on a fresh connection (hiredis, blocking, 5 s timeout) and returns the
  /// reply as text: a string, status or error as is, an integer in decimal, nil as "(nil)", an
  /// array as its elements joined by ",". Throws std::runtime_error when Redis cannot be reached.
  std::string command(const std::vector<std::string>& args) const;

  /// Redis' own clock (TIME) in milliseconds since 1970: the clock the sliding-window script
  /// buckets by. Throws like command().
  [[nodiscard]] std::int64_t time_ms() const;
  /// True if a PING on a fresh connection is answered within `timeout`; false while the server
  /// is busy (inside DEBUG SLEEP, say) or down.
  [[nodiscard]] bool answers_within(std::chrono::milliseconds timeout) const;

 private:
  std::uint16_t port_ = 0;
  std::uint16_t cluster_bus_port_ = 0;  // 0: not a cluster node
  std::vector<std::string> extra_args_;
  std::unique_ptr<ChildProcess> process_;
};

/// Waits (bounded by kDefaultTimeout plus how far off `at_least_ms` is) until `redis`' clock
/// reads at least `at_least_ms`: for tests where time passing on Redis' clock is the behaviour
/// under test (a window sliding on), stated as the condition on that clock instead of a sleep.
[[nodiscard]] ::testing::AssertionResult wait_for_redis_clock(const RedisServer& redis,
                                                              std::int64_t at_least_ms);

}  // namespace sluice::testing
