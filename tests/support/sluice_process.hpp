// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/child_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/timeouts.hpp"

namespace sluice::testing {

/// A valid gateway config for tests to tweak: listen and admin on 127.0.0.1:0, threads 2,
/// access log on stdout, backend "demo" over `endpoints` ("127.0.0.1:PORT") with connect
/// timeout 1000 ms and timeout 5000 ms, one route "all" with prefix "/" to it, no limits.
[[nodiscard]] nlohmann::json minimal_gateway_config(std::vector<std::string> endpoints);

/// The real `sluice` binary (path from the SLUICE_BINARY compile definition that
/// sluice_test_harness carries) on a config written to a fresh temporary directory, started as
/// `sluice --config FILE --log-level info EXTRA_ARGS...`. Unless options.wait_ready is false,
/// the constructor returns once the gateway has logged its `ready proxy=HOST:PORT
/// admin=HOST:PORT threads=N` line, and throws std::runtime_error (with the output) if it
/// exits first or does not log it within options.ready_timeout.
///
/// Thread-safety: the ports and the path are immutable after construction; the rest follows
/// ChildProcess (one test thread). Lifetime: the config file lives as long as this object; the
/// destructor sends SIGTERM, SIGKILLs after 3 s, and removes the directory.
class SluiceProcess {
 public:
  struct Options {
    /// Appended after `--log-level info` (a later --log-level wins).
    std::vector<std::string> extra_args;
    ChildProcess::Env env;
    std::chrono::milliseconds ready_timeout = kDefaultTimeout;
    /// False: return right after starting (for tests of startup failures; ports stay 0).
    bool wait_ready = true;
  };

  explicit SluiceProcess(const nlohmann::json& config);
  SluiceProcess(const nlohmann::json& config, const Options& options);
  ~SluiceProcess();
  SluiceProcess(const SluiceProcess&) = delete;
  SluiceProcess& operator=(const SluiceProcess&) = delete;

  [[nodiscard]] std::uint16_t proxy_port() const noexcept { return proxy_port_; }
  /// The port of the listener named `name` (`listeners[].name`; the v1 `listen` is "default").
  /// Throws std::out_of_range for a name the gateway did not report.
  [[nodiscard]] std::uint16_t listener_port(const std::string& name) const {
    return listener_ports_.at(name);
  }
  [[nodiscard]] std::uint16_t admin_port() const noexcept { return admin_port_; }
  /// The `threads=N` of the ready line (0 before it).
  [[nodiscard]] unsigned threads() const noexcept { return threads_; }
  [[nodiscard]] ChildProcess& process() noexcept { return *process_; }
  [[nodiscard]] const std::filesystem::path& config_path() const noexcept { return config_path_; }

  /// Replaces the config file atomically (write a temporary file, then rename), so a reload
  /// never reads half a file. Does not signal: call reload().
  void rewrite_config(const nlohmann::json& config);
  /// Sends SIGHUP (reload the config file). Does not wait for the reload to happen.
  void reload();
  /// Sends SIGTERM and waits for the exit: its code (0 expected after a drain), nullopt on
  /// timeout. To act during the drain, use process().send_signal(SIGTERM) instead.
  std::optional<int> terminate(std::chrono::milliseconds timeout = kDefaultTimeout);
  /// A real restart: terminate() (throws std::runtime_error unless the exit code is 0), then
  /// the binary again, with the same arguments and environment, on the same config file (as
  /// the last run left it); waits for ready. The ports change (they are ephemeral).
  void restart();
  /// The config file as it is on disk now.
  [[nodiscard]] nlohmann::json read_config() const;

 private:
  void wait_ready(std::chrono::milliseconds timeout);

  TempDir directory_;  // outlives process_ (declared first)
  std::filesystem::path config_path_;
  Options options_;
  std::unique_ptr<ChildProcess> process_;
  std::uint16_t proxy_port_ = 0;
  std::map<std::string, std::uint16_t> listener_ports_;
  std::uint16_t admin_port_ = 0;
  unsigned threads_ = 0;
};

}  // namespace sluice::testing
