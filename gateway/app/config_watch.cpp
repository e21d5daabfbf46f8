// SPDX-License-Identifier: Apache-2.0
#include "gateway/app/config_watch.hpp"

#include <spdlog/spdlog.h>
#include <sys/inotify.h>

#include <boost/asio/buffer.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>

namespace sluice::app {
namespace {

// What changes a file or the name that leads to it: a write (closed, or still going: the
// debounce waits for the end), a create, a delete, and both halves of a rename (an editor's
// save, a ConfigMap's `..data` swap).
constexpr std::uint32_t kEvents =
    IN_CLOSE_WRITE | IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
constexpr std::size_t kEventBuffer = 16 * (sizeof(inotify_event) + NAME_MAX + 1);

}  // namespace

ConfigWatch::ConfigWatch(boost::asio::io_context& ioc, std::filesystem::path path,
                         std::function<void()> changed, std::shared_ptr<spdlog::logger> log,
                         std::chrono::milliseconds debounce)
    : path_(std::filesystem::absolute(std::move(path))),
      changed_(std::move(changed)),
      log_(std::move(log)),
      debounce_(debounce),
      descriptor_(ioc),
      settle_timer_(ioc),
      events_(kEventBuffer),
      alive_(std::make_shared<bool>(true)) {}

ConfigWatch::~ConfigWatch() {
  stop();
}

std::optional<std::string> ConfigWatch::start() {
  if (watching()) {
    return std::nullopt;
  }
  const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    return std::string("inotify: ") + std::strerror(errno);
  }
  descriptor_.assign(fd);
  std::string error;
  if (!add_watch(path_.parent_path(), error)) {
    stop();
    return error;
  }
  std::error_code ec;
  const auto resolved = std::filesystem::canonical(path_, ec);
  if (!ec && resolved.parent_path() != path_.parent_path()) {
    (void)add_watch(resolved.parent_path(), error);  // best effort: the link's own directory
  }
  seen_ = read_file();
  read_events();
  log_->info("watching config file={} debounce_ms={}", path_.string(), debounce_.count());
  return std::nullopt;
}

void ConfigWatch::stop() {
  *alive_ = false;
  alive_ = std::make_shared<bool>(true);
  boost::system::error_code ignored;
  settle_timer_.cancel();
  if (descriptor_.is_open()) {
    descriptor_.close(ignored);
    log_->info("stopped watching config file={}", path_.string());
  }
}

void ConfigWatch::mark_current() {
  if (watching()) {
    seen_ = read_file();
  }
}

bool ConfigWatch::add_watch(const std::filesystem::path& directory, std::string& error) {
  if (inotify_add_watch(descriptor_.native_handle(), directory.c_str(), kEvents) < 0) {
    error = "cannot watch directory " + directory.string() + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

void ConfigWatch::read_events() {
  descriptor_.async_read_some(
      boost::asio::buffer(events_),
      [this, alive = alive_](const boost::system::error_code& ec, std::size_t) {
        if (!*alive) {
          return;
        }
        if (ec) {
          log_->error("config watch stopped file={} error={}", path_.string(), ec.message());
          return;
        }
        // The events themselves do not matter: the bytes decide (settle). Each one restarts
        // the debounce, so a burst (a write in pieces, a symlink swap) is read once, at its end.
        settle_timer_.expires_after(debounce_);
        settle_timer_.async_wait([this, alive](const boost::system::error_code& wait_ec) {
          if (!wait_ec && *alive) {
            settle();
          }
        });
        read_events();
      });
}

void ConfigWatch::settle() {
  std::error_code ec;
  const auto resolved = std::filesystem::canonical(path_, ec);
  std::string ignored;
  if (!ec && resolved.parent_path() != path_.parent_path()) {
    (void)add_watch(resolved.parent_path(), ignored);  // a swapped link leads somewhere new
  }
  auto bytes = read_file();
  if (!bytes) {
    log_->warn("config watch cannot read file={} (the running config stays)", path_.string());
    return;
  }
  if (bytes == seen_) {
    return;
  }
  seen_ = std::move(bytes);
  log_->info("config file changed file={}: reloading", path_.string());
  changed_();
}

std::optional<std::string> ConfigWatch::read_file() const {
  std::ifstream in(path_, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    return std::nullopt;
  }
  return bytes;
}

}  // namespace sluice::app
