// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <optional>
#include <string_view>
#include <vector>

#include "gateway/http2/connection.hpp"
#include "gateway/proxy/exchange/exchange.hpp"
#include "gateway/proxy/io/deadline.hpp"
#include "gateway/proxy/io/net.hpp"
#include "gateway/proxy/request/request_context.hpp"
#include "gateway/proxy/routing/balancer.hpp"
#include "gateway/proxy/session/server_session.hpp"
#include "gateway/proxy/session/services.hpp"
#include "gateway/proxy/session/session_list.hpp"
#include "gateway/proxy/session/tls_session.hpp"
#include "gateway/proxy/upstream/h2_connector.hpp"
#include "gateway/proxy/upstream/tcp_connector.hpp"
#include "gateway/proxy/upstream/upstream_pool.hpp"

namespace sluice::proxy {

/// One worker thread: its io_context and everything confined to it (docs/architecture.md,
/// "Threads"): the accept loop, the sessions, the deadline sweep, the upstream pool and
/// connector, the balancing cursor, the request contexts, the access log batch and the store
/// slot. Every member function except context(), attach_store() and the constructor runs on the
/// worker's thread. The Services outlive the worker.
class Worker {
 public:
  Worker(Services& services, std::size_t index);
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker();

  [[nodiscard]] net::io_context& context() noexcept { return ioc_; }
  [[nodiscard]] std::size_t index() const noexcept { return index_; }
  /// Takes this thread's slot in the limit store (before the threads run).
  void attach_store() { env_.store_slot = services_.store.attach(ioc_); }
  /// Hands this worker's limit decisions to the heavy-hitter sketches through `ring` (before
  /// the threads run; the ring outlives the worker).
  void attach_top_users(insight::UserSampleRing& ring) noexcept { env_.top_users = &ring; }

  /// How a worker serves one listener.
  struct ListenerSetup {
    std::string_view name;  ///< the listener's, for logs; must outlive the worker
    /// Set: its connections speak TLS, each with the certificates the slot has at its accept.
    std::shared_ptr<const tls::CertificateSlot> tls = nullptr;
    HandshakeCounters handshakes = {};  ///< with tls: counts the handshakes
    std::optional<std::uint16_t> redirect_to_port = std::nullopt;  ///< set: every request 308
    /// Every connection starts with a PROXY protocol header (docs/proxy-protocol.md).
    bool proxy_protocol = false;
    /// Set: HTTP/2 is served (h2 by ALPN on TLS, h2c with prior knowledge on plain).
    std::optional<http2::Settings> http2 = std::nullopt;
    /// With http2: counts the GOAWAYs sent; owned by the gateway, outlives the worker.
    const GoawayCounters* goaways = nullptr;
  };
  /// Adds a listener: `acceptor` is already bound and listening. Before start().
  void add_listener(Acceptor acceptor, ListenerSetup setup);
  /// Starts accepting on every listener, and the worker's ticks.
  void start();
  void stop_accepting();
  /// Drain: closes connections that wait for a request; active ones close after answering.
  void close_idle_sessions();
  /// Drain timeout: closes every connection; returns how many were cut.
  std::size_t close_all_sessions();
  /// Hands buffered access log lines to the writer (also done by the periodic tick).
  void flush_access_log();

 private:
  using Timer = net::basic_waitable_timer<std::chrono::steady_clock,
                                          net::wait_traits<std::chrono::steady_clock>, Executor>;
  /// One listener's accept loop state: each loop waits on its own timer (a shared one would
  /// cancel the other loops' waits each time it is re-armed).
  struct Listening {
    Acceptor acceptor;
    ListenerSetup setup;
    Timer wake;
  };
  Task<void> accept_loop(Listening& listening);
  /// Serves one connection of a `proxy_protocol` listener: its PROXY header first (from a
  /// trusted proxy, within `http.header_timeout_ms`), then the session as the carried client.
  Task<void> serve_proxied(Socket socket, Peer peer, const ListenerSetup& setup,
                           ConnectionSlot slot);
  /// Serves one accepted connection: TLS or plain, as the listener is.
  Task<void> serve(Socket socket, Peer peer, const ListenerSetup& setup, ConnectionSlot slot,
                   core::TimePoint accepted);
  /// Ends every accept loop's wait (a connection slot was freed, or accepting stops).
  void wake_accept_loops();
  /// A plain HTTP/2 listener's connection: whether it starts with the h2c preface.
  Task<bool> prior_knowledge(Socket& socket, core::TimePoint accepted);
  Task<void> maintenance_loop();
  void sweep_pool();

  Services& services_;
  std::size_t index_;
  // Order matters: destroying ioc_ destroys suspended session frames, which use the members
  // declared before it; the worker's own I/O objects are declared after it and go first.
  SessionList sessions_;
  ContextPool contexts_;
  /// Memory of pending operations (reads, writes) and their handlers: size-classed and never
  /// locked, so an operation costs no heap allocation once warm, however many are pending.
  std::pmr::unsynchronized_pool_resource ops_;
  WorkerView view_;
  BalanceCursor cursor_;
  std::unique_ptr<log::AccessLog::Batch> access_log_;
  /// This worker's view of the credentials and its token cache (null: nothing is verified).
  std::unique_ptr<auth::WorkerCredentials> credentials_;
  // One thread runs it, and only that thread touches its sockets and timers: the reactor can
  // skip its per-descriptor locks (posts from other threads stay safe: the scheduler locks).
  net::io_context ioc_{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  DeadlineSweep sweep_;
  UpstreamPool<UpstreamStream> pool_;
  TcpConnector tcp_connector_;
  H2Connector connector_;  ///< HTTP/1.1 endpoints through tcp_connector_, HTTP/2 ones pooled
  SessionEnv env_;
  UpstreamContext<UpstreamStream> upstream_;
  std::vector<std::unique_ptr<Listening>> listening_;
  Timer maintenance_;
  core::TimePoint last_pool_sweep_{};
  core::TimePoint last_refusal_log_{};  ///< refused PROXY headers: logged at most once a second
};

}  // namespace sluice::proxy
