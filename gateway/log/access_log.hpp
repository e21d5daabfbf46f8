// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/config/config.hpp"

namespace sluice::log {

/// One access log line (SPEC §7). Views must outlive the write() call only.
struct AccessRecord {
  std::chrono::system_clock::time_point ts;
  std::string_view request_id;
  std::string_view method;
  std::string_view path;  ///< without the query: queries can carry secrets
  std::string_view route;
  std::string_view backend;
  std::string_view endpoint;
  std::optional<std::string_view> user;  ///< a keyed hash, never the credential
  unsigned status = 0;
  std::uint64_t bytes_in = 0;   ///< request body bytes received from the client
  std::uint64_t bytes_out = 0;  ///< response body bytes sent to the client
  double duration_ms = 0;
  std::optional<double> upstream_ms;  ///< from sending upstream to its response header
  std::string_view limit = "none";    ///< allowed | limited | shadow_limited | none
  std::string_view breaker = "off";   ///< pass | dropped | off
};

/// The access log: one JSON object per line, through spdlog's asynchronous logger (a full
/// queue drops the oldest line rather than block an I/O thread). `path` "-" is stdout.
/// Thread-safe. Construction throws when the file cannot be opened.
class AccessLog {
 public:
  explicit AccessLog(const config::AccessLogConfig& config);

  [[nodiscard]] bool enabled() const noexcept { return logger_ != nullptr; }
  void write(const AccessRecord& record);
  void flush();

  /// The JSON line for a record (no trailing newline).
  [[nodiscard]] static std::string format(const AccessRecord& record);

 private:
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace sluice::log
