// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/proxy/balancer.hpp"
#include "gateway/proxy/router.hpp"

namespace sluice::proxy {

/// One configured endpoint of a backend.
struct UpstreamEndpoint {
  std::string label;  ///< "host:port" as configured: logs and the connection pool key
  std::string host;
  std::uint16_t port = 0;
  /// Set when `host` is an IP literal (no resolution needed).
  std::optional<boost::asio::ip::tcp::endpoint> address;
};

/// A backend as the data path uses it. Immutable but for the balancer's in-flight counters.
class Backend {
 public:
  Backend(std::string name, const config::BackendConfig& config);

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const config::BackendConfig& config() const noexcept { return config_; }
  [[nodiscard]] const std::vector<UpstreamEndpoint>& endpoints() const noexcept {
    return endpoints_;
  }
  [[nodiscard]] const Balancer& balancer() const noexcept { return balancer_; }

 private:
  std::string name_;
  config::BackendConfig config_;
  std::vector<UpstreamEndpoint> endpoints_;
  Balancer balancer_;
};

/// Everything a request needs from one version of the config, compiled: the router and the
/// backends. Immutable (thread-safe); a reload builds a new one and swaps it in, and in-flight
/// requests finish on the one they started with.
class Snapshot {
 public:
  explicit Snapshot(std::shared_ptr<const config::Config> config);

  [[nodiscard]] const config::Config& config() const noexcept { return *config_; }
  [[nodiscard]] const Router& router() const noexcept { return router_; }
  [[nodiscard]] const Backend& backend(std::size_t index) const noexcept {
    return *backends_[index];
  }
  [[nodiscard]] std::size_t backend_count() const noexcept { return backends_.size(); }

 private:
  std::shared_ptr<const config::Config> config_;
  std::vector<std::unique_ptr<Backend>> backends_;
  Router router_;
};

/// The current snapshot, swapped atomically on reload. Thread-safe. Readers check the
/// generation (one relaxed atomic load) and copy the snapshot only when it changed.
class SnapshotSource {
 public:
  explicit SnapshotSource(std::shared_ptr<const Snapshot> initial) : current_(std::move(initial)) {}

  [[nodiscard]] std::shared_ptr<const Snapshot> load() const {
    std::lock_guard lock(mutex_);
    return current_;
  }
  void store(std::shared_ptr<const Snapshot> next) {
    std::lock_guard lock(mutex_);
    current_ = std::move(next);
    generation_.fetch_add(1, std::memory_order_release);
  }
  [[nodiscard]] std::uint64_t generation() const noexcept {
    return generation_.load(std::memory_order_acquire);
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const Snapshot> current_;
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace sluice::proxy
