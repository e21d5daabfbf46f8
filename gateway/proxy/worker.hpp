// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <vector>

#include "gateway/proxy/balancer.hpp"
#include "gateway/proxy/net.hpp"
#include "gateway/proxy/services.hpp"
#include "gateway/proxy/snapshot.hpp"
#include "gateway/proxy/upstream_pool.hpp"

namespace sluice::proxy {

/// The snapshot as one worker sees it. Requests hold it through a shared_ptr whose control
/// block is private to the worker, so per-request reference counting never bounces a cache
/// line between threads; the snapshot itself is referenced once per worker.
struct ThreadView {
  std::shared_ptr<const Snapshot> snapshot;
};

/// A downstream connection as the worker tracks it (for drain).
struct SessionEntry {
  beast::tcp_stream* stream = nullptr;
  bool idle = true;  ///< waiting for the next request
};

/// A fixed-size body buffer borrowed from the worker; returned when destroyed.
class BodyBuffer {
 public:
  static constexpr std::size_t kSize = std::size_t{64} * 1024;
  BodyBuffer(std::vector<std::unique_ptr<char[]>>& free_list);  // NOLINT(modernize-avoid-c-arrays)
  BodyBuffer(const BodyBuffer&) = delete;
  BodyBuffer& operator=(const BodyBuffer&) = delete;
  ~BodyBuffer();
  [[nodiscard]] char* data() noexcept { return data_.get(); }

 private:
  std::vector<std::unique_ptr<char[]>>& free_list_;  // NOLINT(modernize-avoid-c-arrays)
  std::unique_ptr<char[]> data_;                     // NOLINT(modernize-avoid-c-arrays)
};

/// One worker thread: its io_context and everything confined to it (STYLE §6) — the accept
/// loop, the sessions, the upstream pool, the resolver, balancing state and body buffers.
/// Every member function except context() and the constructor runs on the worker's thread.
/// The Services outlive the worker.
class Worker {
 public:
  Worker(Services& services, std::size_t index);

  [[nodiscard]] net::io_context& context() noexcept { return ioc_; }
  [[nodiscard]] Services& services() noexcept { return services_; }
  [[nodiscard]] std::size_t index() const noexcept { return index_; }
  /// The current snapshot for a new request (refreshed when a reload swapped it).
  [[nodiscard]] std::shared_ptr<const ThreadView> view();
  [[nodiscard]] UpstreamPool& pool() noexcept { return pool_; }
  [[nodiscard]] BalanceCursor& cursor() noexcept { return cursor_; }
  [[nodiscard]] tcp::resolver& resolver() noexcept { return resolver_; }
  [[nodiscard]] BodyBuffer borrow_buffer() { return {free_buffers_}; }
  /// The same, into `slot` (BodyBuffer cannot move).
  void borrow_buffer(std::optional<BodyBuffer>& slot) { slot.emplace(free_buffers_); }

  /// Starts accepting on `acceptor` (already bound and listening).
  void start_accepting(tcp::acceptor acceptor);
  void stop_accepting();
  /// Drain: closes connections that wait for a request; active ones close after responding.
  void close_idle_sessions();
  /// Drain timeout: closes every connection; returns how many were cut.
  std::size_t close_all_sessions();
  /// Closes pooled connections that idled too long or lead to endpoints no longer configured.
  void sweep_pool();

  /// Registration of a session for as long as the guard lives.
  using SessionHandle = std::list<SessionEntry*>::iterator;
  SessionHandle add_session(SessionEntry& entry) {
    return sessions_.insert(sessions_.end(), &entry);
  }
  void remove_session(SessionHandle handle) { sessions_.erase(handle); }

 private:
  net::awaitable<void> accept_loop();
  net::awaitable<void> maintenance_loop();

  // Order matters: destroying ioc_ destroys suspended session frames, which return their body
  // buffers to free_buffers_ (so it is declared before ioc_); the worker's own I/O objects are
  // declared after ioc_, so they are destroyed before it.
  Services& services_;
  std::size_t index_;
  std::vector<std::unique_ptr<char[]>> free_buffers_;  // NOLINT(modernize-avoid-c-arrays)
  std::list<SessionEntry*> sessions_;
  std::uint64_t view_generation_ = ~std::uint64_t{0};
  std::shared_ptr<const ThreadView> view_;
  BalanceCursor cursor_;
  // One thread runs it, and only that thread touches its sockets and timers: the reactor can
  // skip its per-descriptor locks (posts from other threads stay safe: the scheduler locks).
  net::io_context ioc_{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  std::optional<tcp::acceptor> acceptor_;
  net::steady_timer wake_{ioc_};
  net::steady_timer maintenance_{ioc_};
  UpstreamPool pool_;
  tcp::resolver resolver_{ioc_};
};

}  // namespace sluice::proxy
