// SPDX-License-Identifier: Apache-2.0
#include "gateway/demo/demo_server.hpp"

#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <csignal>
#include <thread>

namespace sluice::demo {
namespace {

constexpr auto kServerAsTuple = net::as_tuple(net::use_awaitable);
// Asio has no public name for SO_REUSEPORT; this is how its own options are declared.
using ReusePort = net::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;

/// Accepts until the acceptor is closed; each connection becomes a session on this thread.
net::awaitable<void> accept_loop(net::ip::tcp::acceptor& acceptor, const SessionContext& context) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kServerAsTuple);
    if (ec == net::error::operation_aborted || !acceptor.is_open()) {
      co_return;
    }
    if (ec) {
      // Out of descriptors or a connection reset while queued: back off briefly, don't spin.
      net::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(10));
      co_await pause.async_wait(kServerAsTuple);
      continue;
    }
    beast::error_code ignored;
    socket.set_option(net::ip::tcp::no_delay(true), ignored);
    spawn_session(std::move(socket), context);
  }
}

}  // namespace

DemoServer::DemoServer(const DemoOptions& options)
    : address_(net::ip::make_address(options.address)),
      faults_(options.faults),
      context_{"", faults_} {
  for (unsigned i = 0; i < options.threads; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    // The first acceptor picks the port (maybe ephemeral); the others join it.
    open_acceptor(*workers_.back(), {address_, i == 0 ? options.port : port_});
    if (i == 0) {
      port_ = workers_.front()->acceptor.local_endpoint().port();
    }
  }
  context_.port_text = std::to_string(port_);
  signals_ = std::make_unique<net::signal_set>(workers_.front()->ioc, SIGINT, SIGTERM);
  // `this` outlives the handler: ~DemoServer cancels it before the io_context is destroyed.
  signals_->async_wait([this](const beast::error_code& ec, int /*signal*/) {
    if (!ec) {
      stop();
    }
  });
}

DemoServer::~DemoServer() {
  signals_.reset();  // before the io_context it uses
  // The sessions die with their io_contexts, one thread's after another's: none may hand a
  // service slot to a session of a thread already gone.
  faults_.capacity().close();
}

void DemoServer::open_acceptor(Worker& worker, const net::ip::tcp::endpoint& endpoint) {
  auto& acceptor = worker.acceptor;
  acceptor.open(endpoint.protocol());
  acceptor.set_option(net::socket_base::reuse_address(true));
  acceptor.set_option(ReusePort(true));
  acceptor.bind(endpoint);
  acceptor.listen(net::socket_base::max_listen_connections);
}

std::string DemoServer::endpoint_text() const {
  const std::string host =
      address_.is_v6() ? "[" + address_.to_string() + "]" : address_.to_string();
  return host + ":" + std::to_string(port_);
}

void DemoServer::run() {
  for (auto& worker : workers_) {
    net::co_spawn(worker->ioc, accept_loop(worker->acceptor, context_), net::detached);
  }
  std::vector<std::thread> threads;
  threads.reserve(workers_.size() - 1);
  for (std::size_t i = 1; i < workers_.size(); ++i) {
    threads.emplace_back([&ioc = workers_[i]->ioc] { ioc.run(); });
  }
  workers_.front()->ioc.run();
  for (auto& thread : threads) {
    thread.join();
  }
}

void DemoServer::stop() {
  // io_context::stop is thread-safe; open sessions are destroyed with their io_context.
  for (auto& worker : workers_) {
    worker->ioc.stop();
  }
}

}  // namespace sluice::demo
