// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy/session/worker.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <random>

#include "gateway/proxy/session/h2_preface.hpp"
#include "gateway/proxy/session/h2_session.hpp"
#include "gateway/proxy/session/proxy_header_reader.hpp"
#include "gateway/proxy/steps/identity.hpp"

namespace sluice::proxy {
namespace {

using namespace std::chrono_literals;

constexpr core::Duration kPooledIdleTime = 30s;  // idle upstream connections older than this close
constexpr core::Duration kTick = 250ms;  // access log hand-over, view refresh, sweep re-tuning
constexpr core::Duration kPoolSweepEvery = 5s;
constexpr core::Duration kGateRecheck = 1s;  // safety net behind the gate's wake-ups

/// Logs what escaped a coroutine (nothing should: the data path does not throw on purpose).
auto log_escape(std::shared_ptr<spdlog::logger> log, const char* what) {
  return [log = std::move(log), what](const std::exception_ptr& e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        log->error("{} failed error={}", what, ex.what());
      }
    }
  };
}

}  // namespace

Worker::Worker(Services& services, std::size_t index)
    : services_(services),
      index_(index),
      view_(services.snapshots),
      access_log_(services.access_log.enabled() ? services.access_log.make_batch() : nullptr),
      credentials_(services.credentials != nullptr
                       ? std::make_unique<auth::WorkerCredentials>(*services.credentials)
                       : nullptr),
      sweep_(ioc_.get_executor(), services.clock),
      pool_(services.clock, kPooledIdleTime, &ops_),
      tcp_connector_(ioc_.get_executor(), sweep_, &ops_, services.log),
      connector_(ioc_.get_executor(), tcp_connector_, services.clock, &ops_, services.log),
      env_{services_,
           view_,
           sweep_,
           contexts_,
           access_log_.get(),
           store::StoreSlot{},
           sessions_,
           &ops_,
           nullptr,
           AuthTools{credentials_.get(), services.auth_failures}},
      upstream_{pool_,          connector_,        cursor_, sweep_,
                services.clock, services.draining, &ops_,   &services.tunnels},
      maintenance_(ioc_.get_executor()),
      last_pool_sweep_(services.clock.now()) {
  std::random_device device;
  cursor_.random_state = (std::uint64_t{device()} << 32U) | device();
  cursor_.next = index;  // workers start their round robin at different endpoints
  services_.gate.on_slot_freed([this] { net::post(ioc_, [this] { wake_accept_loops(); }); });
}

Worker::~Worker() {
  if (access_log_) {
    access_log_->flush();
  }
}

void Worker::add_listener(Acceptor acceptor, ListenerSetup setup) {
  listening_.push_back(std::make_unique<Listening>(
      Listening{std::move(acceptor), std::move(setup), Timer(ioc_.get_executor())}));
}

void Worker::start() {
  sweep_.start(DeadlineSweep::tick_for(view_.current()->snapshot->smallest_timeout()));
  for (auto& listening : listening_) {
    net::co_spawn(ioc_, accept_loop(*listening), log_escape(services_.log, "accept loop"));
  }
  net::co_spawn(ioc_, maintenance_loop(), log_escape(services_.log, "maintenance loop"));
}

Task<void> Worker::accept_loop(Listening& listening) {
  Acceptor& acceptor = listening.acceptor;
  Timer& wake = listening.wake;
  for (;;) {
    while (!services_.gate.try_reserve()) {
      // At max_connections: leave new connections in the kernel backlog until a slot frees.
      if (!acceptor.is_open()) {
        co_return;
      }
      wake.expires_after(kGateRecheck);
      co_await wake.async_wait(kAsTuple);
    }
    ConnectionSlot slot(services_.gate);
    if (!acceptor.is_open()) {
      co_return;
    }
    // The peer's address comes back from accept() itself (no getpeername per connection).
    tcp::endpoint remote;
    Socket socket(ioc_);
    auto [ec] = co_await acceptor.async_accept(socket, remote, kAsTuple);
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) {
        co_return;
      }
      services_.log->warn("accept failed worker={} listener={} error={}", index_,
                          listening.setup.name, ec.message());
      wake.expires_after(100ms);  // e.g. out of file descriptors: do not spin
      co_await wake.async_wait(kAsTuple);
      continue;
    }
    StreamOps<Socket>::prepare(socket);
    slot.accepted();
    const ListenerSetup& setup = listening.setup;
    Peer peer{remote.address(), forwarded_address(remote.address()), setup.name, false,
              setup.redirect_to_port};
    if (setup.proxy_protocol) {
      net::co_spawn(ioc_, serve_proxied(std::move(socket), std::move(peer), setup, std::move(slot)),
                    log_escape(services_.log, "session"));
    } else if (setup.tls) {
      net::co_spawn(
          ioc_,
          run_tls_session(std::move(socket), std::move(peer), setup.tls->load(), setup.handshakes,
                          env_, upstream_, std::move(slot), {}, setup.http2, setup.goaways),
          log_escape(services_.log, "session"));
    } else if (setup.http2) {
      net::co_spawn(
          ioc_,
          serve(std::move(socket), std::move(peer), setup, std::move(slot), services_.clock.now()),
          log_escape(services_.log, "session"));
    } else {
      net::co_spawn(
          ioc_, run_session(std::move(socket), std::move(peer), env_, upstream_, std::move(slot)),
          log_escape(services_.log, "session"));
    }
  }
}

Task<void> Worker::serve_proxied(Socket socket, Peer peer, const ListenerSetup& setup,
                                 ConnectionSlot slot) {
  const core::TimePoint accepted = services_.clock.now();
  const std::shared_ptr<const ThreadView> view = view_.current();  // (kept across the wait)
  const config::HttpConfig& http = view->snapshot->config().http;
  ProxyHeaderRefusal refusal = ProxyHeaderRefusal::kUntrustedPeer;
  std::optional<ProxyHeader> header;
  if (is_trusted(peer.address, http.trusted_proxies)) {
    Deadline deadline(sweep_, &detail::cancel_stream<Socket>, &socket);
    SessionEntry entry(sessions_, &detail::cancel_stream<Socket>, &detail::close_stream<Socket>,
                       &socket);
    entry.idle = true;  // nothing was asked yet: a drain may close it
    deadline.arm(accepted + http.header_timeout);
    header = co_await read_proxy_header(socket, deadline, &ops_, refusal);
    deadline.disarm();
  }
  if (!header) {
    // Closed without an answer: whoever sent this is no client of ours, or a broken balancer.
    if (accepted - last_refusal_log_ >= std::chrono::seconds(1)) {
      last_refusal_log_ = accepted;
      services_.log->debug("proxy header refused listener={} peer={} reason={}", setup.name,
                           peer.text, to_string(refusal));
    }
    StreamOps<Socket>::close(socket);
    co_return;
  }
  if (header->source) {  // (LOCAL, UNKNOWN: the balancer speaks for itself; its address stands)
    peer.address = header->source->address();
    peer.text = forwarded_address(peer.address);
  }
  co_await serve(std::move(socket), std::move(peer), setup, std::move(slot), accepted);
}

Task<void> Worker::serve(Socket socket, Peer peer, const ListenerSetup& setup, ConnectionSlot slot,
                         core::TimePoint accepted) {
  if (setup.tls) {
    co_await run_tls_session(std::move(socket), std::move(peer), setup.tls->load(),
                             setup.handshakes, env_, upstream_, std::move(slot), accepted,
                             setup.http2, setup.goaways);
    co_return;
  }
  bool h2 = false;
  if (setup.http2) {  // (not `&& co_await` in the condition: GCC 12 miscompiles that)
    h2 = co_await prior_knowledge(socket, accepted);
  }
  if (h2) {
    co_await run_h2_session(std::move(socket), std::move(peer), *setup.http2, env_, upstream_,
                            std::move(slot), accepted, setup.goaways);
  } else {
    co_await run_session(std::move(socket), std::move(peer), env_, upstream_, std::move(slot),
                         std::optional<core::TimePoint>(accepted));
  }
}

Task<bool> Worker::prior_knowledge(Socket& socket, core::TimePoint accepted) {
  Deadline deadline(sweep_, &detail::cancel_stream<Socket>, &socket);
  SessionEntry entry(sessions_, &detail::cancel_stream<Socket>, &detail::close_stream<Socket>,
                     &socket);
  entry.idle = true;  // nothing was asked yet: a drain may close it
  deadline.arm(accepted + view_.current()->snapshot->config().http.header_timeout);
  const bool h2 = co_await starts_with_h2_preface(socket, deadline, &ops_);
  deadline.disarm();
  co_return h2;
}

Task<void> Worker::maintenance_loop() {
  for (;;) {
    maintenance_.expires_after(kTick);
    auto [ec] = co_await maintenance_.async_wait(kAsTuple);
    if (ec) {
      co_return;
    }
    flush_access_log();
    // The newest config: its timeouts set the sweep's tick, and the old snapshot is let go.
    sweep_.set_tick(DeadlineSweep::tick_for(view_.current()->snapshot->smallest_timeout()));
    const core::TimePoint now = services_.clock.now();
    if (now - last_pool_sweep_ >= kPoolSweepEvery) {
      last_pool_sweep_ = now;
      sweep_pool();
      contexts_.trim();
    }
  }
}

void Worker::flush_access_log() {
  if (access_log_) {
    access_log_->flush();
  }
}

void Worker::stop_accepting() {
  for (auto& listening : listening_) {
    boost::system::error_code ignored;
    listening->acceptor.close(ignored);
  }
  wake_accept_loops();
}

void Worker::wake_accept_loops() {
  for (auto& listening : listening_) {
    listening->wake.cancel();
  }
}

void Worker::close_idle_sessions() {
  for (SessionEntry& entry : sessions_) {
    if (entry.idle) {
      entry.cancel();
    }
  }
}

std::size_t Worker::close_all_sessions() {
  std::size_t count = 0;
  for (SessionEntry& entry : sessions_) {
    entry.close();
    ++count;
  }
  maintenance_.cancel();
  sweep_.stop();
  pool_.clear();
  connector_.clear();
  flush_access_log();
  return count;
}

void Worker::sweep_pool() {
  const auto& snapshot = *view_.current()->snapshot;
  const auto configured = [&](std::string_view endpoint) {
    for (std::size_t b = 0; b < snapshot.backend_count(); ++b) {
      for (const auto& e : snapshot.backend(b).endpoints()) {
        if (e.label == endpoint) {
          return true;
        }
      }
    }
    return false;
  };
  pool_.sweep(configured);
  connector_.sweep(configured, kPooledIdleTime);
}

}  // namespace sluice::proxy
