// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gateway/demo/demo_options.hpp"
#include "gateway/demo/demo_session.hpp"

namespace sluice::demo {

/// The demo backend: `threads` workers, each an io_context on its own thread with its own
/// acceptor on the shared port (SO_REUSEPORT), so a connection lives on one thread and needs no
/// locks. The constructor binds and listens (throws boost::system::system_error on failure) and
/// installs the SIGINT/SIGTERM handler; run() serves until one of those signals arrives. The
/// fault settings (FaultState) start from the options and are shared by all threads.
/// Thread-safety: construct and run() from one thread; stop() may be called from any thread.
class DemoServer {
 public:
  explicit DemoServer(const DemoOptions& options);
  ~DemoServer();
  DemoServer(const DemoServer&) = delete;
  DemoServer& operator=(const DemoServer&) = delete;

  /// The bound port (the ephemeral one when the options asked for 0).
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  /// "ADDRESS:PORT" (IPv6 addresses in brackets), as printed on the `listening` line.
  [[nodiscard]] std::string endpoint_text() const;

  /// Serves on the calling thread plus threads-1 more until SIGINT, SIGTERM or stop().
  void run();
  /// Stops every worker; run() returns once their threads have ended.
  void stop();

 private:
  /// One thread's share of the server. The io_context outlives the acceptor and every session
  /// (sessions are destroyed with it).
  struct Worker {
    net::io_context ioc{1};
    net::ip::tcp::acceptor acceptor{ioc};
  };

  void open_acceptor(Worker& worker, const net::ip::tcp::endpoint& endpoint);

  net::ip::address address_;
  std::uint16_t port_ = 0;
  FaultState faults_;       // shared by every thread's sessions through context_ (and the slots)
  SessionContext context_;  // outlives the sessions, which die with the workers
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<net::signal_set> signals_;  // on workers_[0], so destroyed before it
};

}  // namespace sluice::demo
