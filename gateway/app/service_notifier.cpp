// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/service_notifier.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace sluice::app {
namespace {

/// sun_path's bytes for `path`: '@' becomes the NUL that marks the abstract namespace (systemd's
/// notify protocol, sd_notify(3)). Empty when it does not fit or is neither form.
std::string notify_address(std::string_view path) {
  if (path.empty() || (path.front() != '/' && path.front() != '@') ||
      path.size() > sizeof(sockaddr_un::sun_path) - 1) {
    return {};
  }
  std::string address(path);
  if (address.front() == '@') {
    address.front() = '\0';
  }
  return address;
}

}  // namespace

ServiceNotifier ServiceNotifier::from_environment(std::shared_ptr<spdlog::logger> log) {
  const char* path = std::getenv("NOTIFY_SOCKET");  // NOLINT(concurrency-mt-unsafe): at start
  return {path == nullptr ? std::nullopt : std::optional<std::string>(path), std::move(log)};
}

ServiceNotifier::ServiceNotifier(std::optional<std::string> socket_path,
                                 std::shared_ptr<spdlog::logger> log)
    : log_(std::move(log)) {
  if (!socket_path || socket_path->empty()) {
    return;
  }
  address_ = notify_address(*socket_path);
  if (address_.empty()) {
    log_->warn("service notify disabled: NOTIFY_SOCKET={} is not a usable unix socket path",
               *socket_path);
    return;
  }
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) {
    report_failure("socket", errno);
    return;
  }
  log_->debug("service notify socket={}", *socket_path);
}

ServiceNotifier::~ServiceNotifier() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

void ServiceNotifier::ready(std::string_view status) {
  send("READY=1\nSTATUS=" + std::string(status));
}

void ServiceNotifier::reloading(core::TimePoint now) {
  const auto usec = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch());
  send("RELOADING=1\nSTATUS=reloading\nMONOTONIC_USEC=" + std::to_string(usec.count()));
}

void ServiceNotifier::stopping(std::string_view status) {
  send("STOPPING=1\nSTATUS=" + std::string(status));
}

bool ServiceNotifier::send(std::string_view message) {
  if (fd_ < 0) {
    return false;
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(&address.sun_path[0], address_.data(), address_.size());
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address_.size());
  // MSG_NOSIGNAL: a gone peer is an error value, never SIGPIPE.
  const auto sent = ::sendto(fd_, message.data(), message.size(), MSG_NOSIGNAL | MSG_DONTWAIT,
                             // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast)
                             reinterpret_cast<const sockaddr*>(&address), length);
  if (sent < 0) {
    report_failure("send", errno);
    return false;
  }
  return true;
}

void ServiceNotifier::report_failure(std::string_view what, int error) {
  const std::string reason = std::generic_category().message(error);
  if (has_warned_) {
    log_->debug("service notify failed step={} error={}", what, reason);
    return;
  }
  has_warned_ = true;
  log_->warn("service notify failed step={} error={} (later failures are logged at debug level)",
             what, reason);
}

}  // namespace sluice::app
