// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gateway/core/clock.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/proxy/io/net.hpp"
#include "gateway/proxy/io/stream_ops.hpp"
#include "gateway/proxy/routing/upstream_endpoint.hpp"
#include "gateway/proxy/upstream/upstream_connection.hpp"

namespace sluice::proxy {

/// Idle keep-alive connections to upstream endpoints, for one worker thread: pools are per
/// thread and lock-free (docs/architecture.md, "Threads"). A connection has one user at a time:
/// checkout() hands it out and checkin() takes it back, watching it. Checkout is LIFO (the most
/// recently used connection is the most likely to be alive) and drops connections whose watching
/// read saw the upstream close or send unasked bytes, or that idled longer than `max_idle_time`.
/// Confined to one thread; the clock must outlive the pool.
template <typename Stream>
class UpstreamPool {
 public:
  /// Watching reads take their memory from `ops`.
  UpstreamPool(const core::Clock& clock, core::Duration max_idle_time,
               std::pmr::memory_resource* ops = std::pmr::get_default_resource())
      : clock_(clock), max_idle_time_(max_idle_time), ops_(ops) {}

  /// A live idle connection to `endpoint` (the endpoint's label) opened with the TLS settings
  /// `tls` (null: plain), or null. Connections opened with other settings are closed.
  ConnectionPtr<Stream> checkout(std::string_view endpoint, const tls::ClientTls* tls = nullptr) {
    const auto it = idle_.find(endpoint);
    if (it == idle_.end()) {
      return nullptr;
    }
    auto& stack = it->second;
    const core::TimePoint now = clock_.now();
    while (!stack.empty()) {
      Idle entry = std::move(stack.back());
      stack.pop_back();
      --idle_count_;
      if (now - entry.since < max_idle_time_ && entry.connection->intact() &&
          entry.connection->tls == tls) {
        return std::move(entry.connection);
      }
      StreamOps<Stream>::close(entry.connection->stream);
    }
    return nullptr;
  }

  /// Keeps a connection after a complete exchange (its buffer empty), unless `endpoint` already
  /// has `max_idle`.
  void checkin(std::string_view endpoint, ConnectionPtr<Stream> connection, std::size_t max_idle) {
    auto it = idle_.find(endpoint);
    if (it == idle_.end()) {
      if (max_idle == 0) {
        StreamOps<Stream>::close(connection->stream);
        return;
      }
      it = idle_.emplace(std::string(endpoint), std::vector<Idle>{}).first;
    }
    if (it->second.size() >= max_idle) {
      StreamOps<Stream>::close(connection->stream);
      return;
    }
    connection->mark_idle();
    if (connection->buffer.capacity() > kIdleBufferLimit) {
      connection->buffer.shrink_to_fit();  // after a large body: an idle connection keeps little
    }
    connection->watch(ops_);
    it->second.push_back(Idle{std::move(connection), clock_.now()});
    ++idle_count_;
  }

  /// Closes connections idle too long, and every connection to an endpoint `keep` rejects.
  std::size_t sweep(const std::function<bool(std::string_view endpoint)>& keep) {
    const core::TimePoint now = clock_.now();
    std::size_t closed = 0;
    for (auto it = idle_.begin(); it != idle_.end();) {
      const bool kept_endpoint = keep(it->first);
      auto& stack = it->second;
      std::erase_if(stack, [&](Idle& e) {
        const bool drop =
            !kept_endpoint || now - e.since >= max_idle_time_ || !e.connection->intact();
        if (drop) {
          StreamOps<Stream>::close(e.connection->stream);
          ++closed;
        }
        return drop;
      });
      it = stack.empty() ? idle_.erase(it) : std::next(it);
    }
    idle_count_ -= closed;
    return closed;
  }

  /// Closes everything (shutdown).
  void clear() {
    for (auto& [endpoint, stack] : idle_) {
      for (auto& e : stack) {
        StreamOps<Stream>::close(e.connection->stream);
      }
    }
    idle_.clear();
    idle_count_ = 0;
  }

  [[nodiscard]] std::size_t idle() const noexcept { return idle_count_; }

 private:
  static constexpr std::size_t kIdleBufferLimit = std::size_t{16} * 1024;
  struct Idle {
    ConnectionPtr<Stream> connection;
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
  std::pmr::memory_resource* ops_;
  std::unordered_map<std::string, std::vector<Idle>, Hash, std::equal_to<>> idle_;
  std::size_t idle_count_ = 0;
};

/// What a connector produced: a connection, or the error why not.
template <typename Stream>
struct Connected {
  ConnectionPtr<Stream> connection;
  boost::system::error_code error;
};

/// Opens new upstream connections: the seam between the exchange and the network. The TCP
/// connector (tcp_connector.hpp) resolves and connects; tests connect in-memory streams to
/// scripted peers. A connection it returns is watched (UpstreamConnection::watch()): the read
/// that will receive the response is pending. Confined to the worker's thread.
template <typename Stream>
class Connector {
 public:
  virtual ~Connector() = default;
  /// A connection to `endpoint` within `timeout`, or the error (a timeout is
  /// beast::error::timeout).
  virtual Task<Connected<Stream>> connect(const UpstreamEndpoint& endpoint,
                                          core::Duration timeout) = 0;
};

}  // namespace sluice::proxy
