// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

namespace sluice::testing {

/// The service manager's end of the notify protocol (gateway/app/service_notifier.hpp): a
/// datagram socket bound to `sun_path` bytes, a file path or a leading NUL and an abstract
/// name (what NOTIFY_SOCKET spells with '@'). Throws std::runtime_error when it cannot bind.
/// Thread-safety: one test thread. Lifetime: owns the socket; a file path stays on disk (put it
/// in a TempDir).
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& sun_path)
      : fd_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) {
    sockaddr_un address{};
    if (sun_path.size() >= sizeof(address.sun_path)) {
      throw std::runtime_error("notify socket path too long: " + sun_path);
    }
    address.sun_family = AF_UNIX;
    std::memcpy(&address.sun_path[0], sun_path.data(), sun_path.size());
    const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + sun_path.size());
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast)
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
      if (fd_ >= 0) {
        ::close(fd_);
      }
      throw std::runtime_error("cannot bind a notify socket at " + sun_path);
    }
  }
  ~NotifySocket() { ::close(fd_); }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  /// The next datagram, waiting at most `timeout` for one; nullopt if none came. A datagram
  /// sent to a local socket is queued by the time its sendto() returns, so a sender in the
  /// same thread needs no wait (timeout 0).
  std::optional<std::string> next(std::chrono::milliseconds timeout = {}) {
    pollfd ready{fd_, POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(timeout.count())) <= 0) {
      return std::nullopt;
    }
    std::array<char, 4096> buffer{};
    const auto n = ::recv(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT);
    if (n < 0) {
      return std::nullopt;
    }
    return std::string(buffer.data(), static_cast<std::size_t>(n));
  }

 private:
  int fd_;
};

}  // namespace sluice::testing
