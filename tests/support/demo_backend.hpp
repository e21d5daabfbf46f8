// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "tests/support/child_process.hpp"
#include "tests/support/timeouts.hpp"

namespace sluice::testing {

/// The real `sluice-demo-backend` (path from the SLUICE_DEMO_BACKEND compile definition that
/// sluice_test_harness carries) on 127.0.0.1 and an ephemeral port, started by the constructor,
/// which returns once the backend has printed `listening 127.0.0.1:PORT` (throws
/// std::runtime_error with the backend's output if that does not happen within `timeout`).
/// Routes: see gateway/demo/demo_routes.hpp (/ok, /echo, /count, /status/N, /slow/MS,
/// /bytes/N, /headers, /close, the WebSocket routes /ws/echo and /ws/push?n=N&size=S, see
/// WsClient, and /healthz with the fault switches of POST /control, see set_faults() in
/// tests/integration/proxy/proxy_fixture.hpp). Every response carries `X-Backend-Port: PORT`.
///
/// Thread-safety: port() and endpoint() are immutable; the rest follows ChildProcess. The
/// destructor stops the backend (SIGTERM, then SIGKILL after 2 s).
class DemoBackend {
 public:
  explicit DemoBackend(unsigned threads = 1, std::chrono::milliseconds timeout = kDefaultTimeout);
  ~DemoBackend();
  DemoBackend(const DemoBackend&) = delete;
  DemoBackend& operator=(const DemoBackend&) = delete;

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  /// "127.0.0.1:PORT", as a gateway config endpoint.
  [[nodiscard]] std::string endpoint() const;
  [[nodiscard]] pid_t pid() const noexcept { return process_.pid(); }
  [[nodiscard]] ChildProcess& process() noexcept { return process_; }

  /// SIGTERM and wait for the exit: the exit code (0 expected), nullopt on timeout.
  std::optional<int> stop(std::chrono::milliseconds timeout = kDefaultTimeout);

 private:
  ChildProcess process_;
  std::uint16_t port_ = 0;
};

}  // namespace sluice::testing
