// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/core/clock.hpp"

namespace sluice::app {

/// Tells the service manager about the gateway's lifecycle in systemd's notify protocol
/// (docs/packaging.md, "Readiness and reload"): one datagram of `KEY=VALUE` lines per message
/// to the AF_UNIX socket named by the NOTIFY_SOCKET environment variable (a leading '@' names
/// the abstract namespace). Without that variable every call does nothing. No libsystemd: the
/// protocol is a datagram, and this is all of it sluice needs.
///
/// Sending never blocks: the socket is non-blocking, so a service manager that does not read
/// costs a dropped message, not a stalled thread. The first failure is logged as a warning,
/// later ones at debug level; none is an error for the gateway.
///
/// Not thread-safe: the gateway calls it from its main thread only. Owns its socket; holds
/// the logger by shared_ptr.
class ServiceNotifier {
 public:
  /// Notifies the socket NOTIFY_SOCKET names, or nothing when it is unset or empty.
  [[nodiscard]] static ServiceNotifier from_environment(std::shared_ptr<spdlog::logger> log);

  /// Notifies `socket_path` (a file system path, or '@' and an abstract name); nothing when
  /// it is nullopt or empty.
  ServiceNotifier(std::optional<std::string> socket_path, std::shared_ptr<spdlog::logger> log);
  ~ServiceNotifier();
  ServiceNotifier(const ServiceNotifier&) = delete;
  ServiceNotifier& operator=(const ServiceNotifier&) = delete;

  /// True when there is a socket to notify.
  [[nodiscard]] bool is_enabled() const noexcept { return fd_ >= 0; }

  /// `READY=1` with `STATUS=status`: serving (at start, and when a reload has finished, whether
  /// it succeeded or not).
  void ready(std::string_view status);
  /// `RELOADING=1` with `MONOTONIC_USEC=` (`now` on the steady clock, which is CLOCK_MONOTONIC
  /// on Linux; systemd 253 and later want it, older ones ignore it): a reload starts.
  void reloading(core::TimePoint now);
  /// `STOPPING=1` with `STATUS=status`: the drain before the exit has begun.
  void stopping(std::string_view status);

  /// Sends `message` (newline-separated assignments) as one datagram. False when it was not
  /// sent (disabled, or the send failed).
  bool send(std::string_view message);

 private:
  void report_failure(std::string_view what, int error);

  std::string address_;  ///< sockaddr_un's sun_path bytes (abstract: a leading NUL)
  int fd_ = -1;
  std::shared_ptr<spdlog::logger> log_;
  bool has_warned_ = false;
};

}  // namespace sluice::app
