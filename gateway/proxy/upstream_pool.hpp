// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/proxy/net.hpp"

namespace sluice::proxy {

/// One connection to an upstream endpoint with its read buffer (which outlives single reads).
/// Always held by unique_ptr and never moved itself: moving a beast::tcp_stream allocates a new
/// implementation object, and a pooled connection changes owner on every request.
/// It also keeps `sluice_upstream_connections{backend, state}` true for as long as it lives:
/// active while a request uses it, idle while pooled. The metrics outlive every connection.
struct UpstreamConnection {
  explicit UpstreamConnection(net::io_context& ioc) : stream(ioc) {}
  UpstreamConnection(const UpstreamConnection&) = delete;
  UpstreamConnection& operator=(const UpstreamConnection&) = delete;
  ~UpstreamConnection() { leave_state(); }

  /// In use by a request to the backend of `metrics` (a new or a checked-out connection).
  void mark_active(metrics::BackendMetrics& metrics) {
    leave_state();
    owner_ = &metrics;
    idle_ = false;
    owner_->active.fetch_add(1, std::memory_order_relaxed);
  }
  /// Back in the pool.
  void mark_idle() {
    auto* owner = owner_;
    leave_state();
    if (owner != nullptr) {
      owner_ = owner;
      idle_ = true;
      owner_->idle.fetch_add(1, std::memory_order_relaxed);
    }
  }

  beast::tcp_stream stream;
  beast::flat_buffer buffer;

 private:
  void leave_state() {
    if (owner_ != nullptr) {
      (idle_ ? owner_->idle : owner_->active).fetch_sub(1, std::memory_order_relaxed);
      owner_ = nullptr;
      idle_ = false;
    }
  }
  metrics::BackendMetrics* owner_ = nullptr;
  bool idle_ = false;
};
using ConnectionPtr = std::unique_ptr<UpstreamConnection>;

/// Idle keep-alive connections to upstream endpoints, for one worker thread (STYLE §6: pools
/// are per thread and lock-free). A connection has exactly one owner: checkout() hands it out and
/// checkin() takes it back. Checkout is LIFO (the most recently used connection
/// is the most likely to be alive) and drops connections the upstream has closed (a
/// non-blocking peek sees EOF or stray bytes) or that idled longer than `max_idle_time`.
/// Confined to one thread. The clock must outlive the pool.
class UpstreamPool {
 public:
  UpstreamPool(const core::Clock& clock, core::Duration max_idle_time)
      : clock_(clock), max_idle_time_(max_idle_time) {}

  /// A live idle connection to `endpoint` (the endpoint's label), or null.
  ConnectionPtr checkout(std::string_view endpoint);
  /// Keeps a connection after a complete exchange (its buffer empty), unless `endpoint` already
  /// has `max_idle`.
  void checkin(std::string_view endpoint, ConnectionPtr connection, std::size_t max_idle);
  /// Closes connections idle too long, and every connection to an endpoint `keep` rejects.
  std::size_t sweep(const std::function<bool(std::string_view endpoint)>& keep);
  /// Closes everything (shutdown).
  void clear();

  [[nodiscard]] std::size_t idle() const noexcept { return idle_count_; }

 private:
  struct Idle {
    ConnectionPtr connection;
    core::TimePoint since;
  };
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };

  const core::Clock& clock_;
  core::Duration max_idle_time_;
  std::unordered_map<std::string, std::vector<Idle>, Hash, std::equal_to<>> idle_;
  std::size_t idle_count_ = 0;
};

/// True when the upstream has not closed the connection (nothing to read yet, no EOF).
[[nodiscard]] bool looks_alive(tcp::socket& socket) noexcept;

}  // namespace sluice::proxy
