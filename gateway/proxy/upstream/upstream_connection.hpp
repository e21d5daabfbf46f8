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
#include <utility>

#include "gateway/core/clock.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/proxy/io/net.hpp"
#include "gateway/proxy/io/stream_ops.hpp"
#include "gateway/proxy/routing/upstream_endpoint.hpp"
#include "gateway/tls/client_tls.hpp"

namespace sluice::proxy {

/// One connection to an upstream endpoint with its read buffer (which outlives single reads).
/// Shared (a pending read's handler holds it) and never moved itself.
///
/// While the connection idles in a pool, a read stays pending on it (watch()): it sees the
/// upstream closing, or sending bytes nobody asked for, the moment it happens, so a checkout
/// needs no check of its own (nginx keeps a read handler on idle upstream connections for the
/// same reason); and it is the very read that receives the next response's first bytes
/// (async_receive()), so reusing a connection costs no extra system call
/// (docs/architecture.md, "Upstream connections").
///
/// It also keeps `sluice_upstream_connections{backend, state}` true for as long as it lives:
/// active while a request uses it, idle while pooled. It shares the counts it is in with the
/// backend's metrics, so they stay valid when a reload retires the backend while the connection
/// still idles in a pool or waits on an aborted read. Confined to the worker's thread.
template <typename Stream>
class UpstreamConnection : public std::enable_shared_from_this<UpstreamConnection<Stream>> {
 public:
  /// How much the watching read asks for: a typical response head and small body.
  static constexpr std::size_t kWatchRead = 4096;

  template <typename... Args>
  explicit UpstreamConnection(Args&&... args) : stream(std::forward<Args>(args)...) {}
  UpstreamConnection(const UpstreamConnection&) = delete;
  UpstreamConnection& operator=(const UpstreamConnection&) = delete;
  ~UpstreamConnection() { leave_state(); }

  /// In use by a request to the backend of `metrics` (a new or a checked-out connection).
  void mark_active(const metrics::BackendMetrics& metrics) {
    if (owner_ != metrics.connections) {
      leave_state();
      owner_ = metrics.connections;
    } else {
      leave_state_keeping_owner();
    }
    idle_ = false;
    owner_->active.fetch_add(1, std::memory_order_relaxed);
  }
  /// Back in the pool.
  void mark_idle() {
    if (owner_ != nullptr) {
      leave_state_keeping_owner();
      idle_ = true;
      owner_->idle.fetch_add(1, std::memory_order_relaxed);
    }
  }

  /// Starts the watching read (once: a second call while it is pending does nothing). Its
  /// operation takes memory from `ops`.
  void watch(std::pmr::memory_resource* ops) {
    if (watching_ || result_) {
      return;
    }
    ops_ = ops;
    watching_ = true;
    stream.async_read_some(buffer.prepare(kWatchRead), WatchHandler{this->shared_from_this(), ops});
  }
  /// True while the watching read is pending with nothing read: the connection is intact.
  [[nodiscard]] bool intact() const noexcept { return watching_; }
  /// The watching read's result; its bytes are already in `buffer`. Starts one when none is
  /// pending (watch() with the pool the connection last used).
  template <typename CompletionToken>
  auto async_receive(CompletionToken&& token) {
    return net::async_initiate<CompletionToken, void(boost::system::error_code, std::size_t)>(
        [this](auto handler) {
          watch(ops_);
          if (result_) {
            const auto [ec, n] = *result_;
            result_.reset();
            net::post(stream.get_executor(), net::append(std::move(handler), ec, n));
            return;
          }
          waiter_.emplace(std::move(handler));
        },
        token);
  }

  Stream stream;
  beast::flat_buffer buffer;
  /// The TLS settings it was opened with (null: plain): a pooled connection serves only an
  /// endpoint with the very same ones (a reload that re-read the files makes new ones).
  const tls::ClientTls* tls = nullptr;

 private:
  /// The watching read's completion: keeps the connection alive until it runs, runs on the
  /// stream's executor, and takes its operation's memory from the worker's pool.
  ///
  /// Destroyed without running (the io_context shuts down with the read pending), it drops the
  /// waiting receiver too: that receiver (a suspended exchange) holds the connection, and the
  /// connection holds it, so nothing else would ever free either.
  struct WatchHandler {
    using executor_type = typename Stream::executor_type;
    using allocator_type = std::pmr::polymorphic_allocator<std::byte>;
    WatchHandler(std::shared_ptr<UpstreamConnection> connection, std::pmr::memory_resource* memory)
        : self(std::move(connection)), ops(memory) {}
    WatchHandler(WatchHandler&&) noexcept = default;
    WatchHandler& operator=(WatchHandler&&) noexcept = default;
    WatchHandler(const WatchHandler&) = delete;
    WatchHandler& operator=(const WatchHandler&) = delete;
    ~WatchHandler() {
      if (self != nullptr) {
        self->abandon();
      }
    }
    [[nodiscard]] executor_type get_executor() const noexcept {
      return self->stream.get_executor();
    }
    [[nodiscard]] allocator_type get_allocator() const noexcept { return allocator_type(ops); }
    void operator()(boost::system::error_code ec, std::size_t n) {
      const auto connection = std::move(self);
      connection->on_read(ec, n);
    }

    std::shared_ptr<UpstreamConnection> self;
    std::pmr::memory_resource* ops;
  };

  void on_read(boost::system::error_code ec, std::size_t n) {
    watching_ = false;
    if (!ec) {
      buffer.commit(n);
    }
    if (waiter_) {
      auto waiter = std::move(*waiter_);
      waiter_.reset();
      std::move(waiter)(ec, n);
    } else if (ec) {
      result_.emplace(ec, n);  // the connection is done for: async_receive() reports why
    }
    // (Bytes nobody waited for are in `buffer`: the exchange that asked finds them there, and a
    // pooled connection is no longer intact().)
  }
  void abandon() noexcept {
    watching_ = false;
    if (waiter_) {
      auto waiter = std::move(*waiter_);
      waiter_.reset();
    }  // the receiver's destruction releases what it held, the connection among it
  }
  void leave_state_keeping_owner() {
    if (owner_ != nullptr) {
      (idle_ ? owner_->idle : owner_->active).fetch_sub(1, std::memory_order_relaxed);
      idle_ = false;
    }
  }
  void leave_state() {
    leave_state_keeping_owner();
    owner_.reset();
  }

  // Shared with the backend's metrics: a reload may retire them while this connection idles.
  std::shared_ptr<metrics::ConnectionCounts> owner_;
  bool idle_ = false;
  bool watching_ = false;
  std::pmr::memory_resource* ops_ = std::pmr::get_default_resource();
  std::optional<std::pair<boost::system::error_code, std::size_t>> result_;
  std::optional<net::any_completion_handler<void(boost::system::error_code, std::size_t)>> waiter_;
};

template <typename Stream>
using ConnectionPtr = std::shared_ptr<UpstreamConnection<Stream>>;

}  // namespace sluice::proxy
