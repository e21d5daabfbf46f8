// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace spdlog {
class logger;
}

namespace sluice::app {

/// `"config_watch": true` (docs/behaviour.md, "Watching the config file"): calls `changed`
/// when the config file's bytes change. inotify watches the directory that holds the path and
/// the directory its symlinks resolve to, so a write in place, an editor's rename and a
/// Kubernetes ConfigMap's atomic `..data` symlink swap are all seen. Events closer together
/// than `debounce` are one change. The bytes are compared with the last ones seen (at start,
/// at each change, and after sluice writes the file itself: mark_current()), so a touch, an
/// unrelated file in the directory or sluice's own persisted write never reloads.
/// Blocking file reads: used on the main (control) thread only. Confined to the thread that
/// runs `ioc`, which must outlive it.
class ConfigWatch {
 public:
  static constexpr std::chrono::milliseconds kDebounce{200};

  ConfigWatch(boost::asio::io_context& ioc, std::filesystem::path path,
              std::function<void()> changed, std::shared_ptr<spdlog::logger> log,
              std::chrono::milliseconds debounce = kDebounce);
  ConfigWatch(const ConfigWatch&) = delete;
  ConfigWatch& operator=(const ConfigWatch&) = delete;
  ~ConfigWatch();

  /// Starts watching (the file's bytes now are the baseline); an error says why it cannot
  /// (no inotify instance, the directory is gone). Starting twice does nothing.
  [[nodiscard]] std::optional<std::string> start();
  void stop();
  [[nodiscard]] bool watching() const noexcept { return descriptor_.is_open(); }
  /// The file's bytes now are what runs (sluice just read or wrote it): no change to report.
  void mark_current();

 private:
  void read_events();
  /// Adds a watch on `directory`; false when inotify refuses.
  bool add_watch(const std::filesystem::path& directory, std::string& error);
  /// The debounce ended: the bytes now against the last seen.
  void settle();
  [[nodiscard]] std::optional<std::string> read_file() const;

  std::filesystem::path path_;
  std::function<void()> changed_;
  std::shared_ptr<spdlog::logger> log_;
  std::chrono::milliseconds debounce_;
  boost::asio::posix::stream_descriptor descriptor_;
  boost::asio::steady_timer settle_timer_;
  std::vector<char> events_;
  std::optional<std::string> seen_;  ///< the bytes last seen (nullopt: unreadable)
  /// Shared with pending handlers: cleared by stop(), so a late completion does nothing.
  std::shared_ptr<bool> alive_;
};

}  // namespace sluice::app
