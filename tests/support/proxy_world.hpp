// SPDX-License-Identifier: Apache-2.0
// The data path in one test, without sockets: a config compiled into a snapshot (real store,
// breakers, metrics), Beast's in-memory streams for the client and the upstreams, and the
// worker-side pieces a session or an exchange takes (deadline sweep on a manual clock, pool,
// connector, contexts). Time moves only when the test says so: run() drains the io_context, and
// advance() moves the clock and lets the sweep fire due deadlines.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <deque>
#include <memory>
#include <memory_resource>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "gateway/breaker/breaker_registry.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/insight/top_users.hpp"
#include "gateway/log/access_log.hpp"
#include "gateway/log/logging.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/proxy/exchange/exchange.hpp"
#include "gateway/proxy/routing/config_sync.hpp"
#include "gateway/proxy/session/server_session.hpp"
#include "gateway/store/memory_store.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/scripted_random.hpp"
#include "tests/support/test_stream_ops.hpp"

namespace sluice::testing {

/// Opens in-memory connections: each connect() pairs a local stream (the exchange's) with a
/// remote one the test scripts. A canned response, when queued, is already waiting on the
/// connection (what the upstream "sends" once asked); endpoints marked refused fail to connect.
/// The production TcpConnector is the same seam, exercised by the integration tests.
class TestConnector final : public proxy::Connector<TestStream> {
 public:
  TestConnector(boost::asio::io_context& ioc, std::pmr::memory_resource* ops)
      : ioc_(ioc), ops_(ops) {}

  proxy::Task<proxy::Connected<TestStream>> connect(const proxy::UpstreamEndpoint& endpoint,
                                                    core::Duration /*timeout*/) override {
    ++connects;
    proxy::Connected<TestStream> out;
    if (refused.contains(endpoint.label)) {
      out.error = boost::asio::error::connection_refused;
      co_return out;
    }
    auto conn = fail != nullptr
                    ? std::make_shared<proxy::UpstreamConnection<TestStream>>(ioc_, *fail)
                    : std::make_shared<proxy::UpstreamConnection<TestStream>>(ioc_.get_executor());
    auto remote = std::make_unique<TestStream>(ioc_.get_executor());
    conn->stream.connect(*remote);
    if (read_size != 0) {
      conn->stream.read_size(read_size);
    }
    if (!responses.empty()) {
      remote->write_size(1 << 20);
      boost::asio::write(*remote, boost::asio::buffer(responses.front()));
      responses.pop_front();
    }
    conn->watch(ops_);
    peers.push_back(std::move(remote));
    out.connection = std::move(conn);
    co_return out;
  }

  /// What the upstream side of connection `i` received so far.
  [[nodiscard]] std::string received(std::size_t i) const {
    return std::string(peers.at(i)->str());
  }

  std::deque<std::string> responses;               ///< one per new connection, in order
  std::set<std::string, std::less<>> refused;      ///< endpoint labels that refuse
  std::vector<std::unique_ptr<TestStream>> peers;  ///< the upstream ends, in connect order
  int connects = 0;
  /// When set, the exchange's end of every new connection fails the operation it counts down to.
  boost::beast::test::fail_count* fail = nullptr;
  /// When set, the exchange's end of a new connection reads at most this much at a time.
  std::size_t read_size = 0;

 private:
  boost::asio::io_context& ioc_;
  std::pmr::memory_resource* ops_;
};

/// A config compiled for the data path, and the worker pieces around it.
class ProxyWorld {
 public:
  /// `config` is a gateway config document (listen, backends, routes...).
  explicit ProxyWorld(const nlohmann::json& config)
      : config_(parse(config)),
        store_(clock, store::MemoryStore::Options{}),
        breakers_(clock, random),
        metrics("test"),
        top_users_(clock, 1),
        sync_(store_, breakers_, health_, metrics,
              config_->admin.top_users ? &top_users_ : nullptr),
        snapshots_(std::make_shared<const proxy::Snapshot>(config_, sync_.apply(*config_))),
        gate(1000),
        access_log_(config_->access_log),
        services(clock, snapshots_, gate, access_log_, store_,
                 core::KeyedHash::from_secret("a test secret of 16+"), log::get("proxy")),
        view(snapshots_),
        sweep(ioc.get_executor(), clock),
        pool(clock, std::chrono::seconds(30), &ops),
        connector(ioc, &ops),
        env{services, view,    sweep,
            contexts, nullptr, store::StoreSlot{},
            sessions, &ops,    config_->admin.top_users ? &top_users_.ring(0) : nullptr},
        upstream{pool,  connector,         cursor, sweep,
                 clock, services.draining, &ops,   &services.tunnels} {}

  /// Runs every handler that is ready now (the clock does not move).
  void run() {
    ioc.restart();
    ioc.poll();
  }
  /// Moves the clock by `d`, fires the deadlines due, and runs what that made ready.
  void advance(core::Duration d) {
    clock.advance(d);
    sweep.sweep(clock.now());
    run();
  }
  [[nodiscard]] const proxy::Snapshot& snapshot() const { return *snapshots_.load(); }
  [[nodiscard]] store::MemoryStore& store() { return store_; }
  [[nodiscard]] breaker::BreakerRegistry& breakers() { return breakers_; }
  /// The policies' heavy hitters (none bound when the config's admin.top_users is false); fed
  /// through ring 0, which the requests run here push to (drain() before reading).
  [[nodiscard]] insight::TopUsersRegistry& top_users() { return top_users_; }

  ManualClock clock;
  ScriptedRandom random;
  std::pmr::unsynchronized_pool_resource ops;

 private:
  static std::shared_ptr<const config::Config> parse(const nlohmann::json& document) {
    auto loaded = config::parse_config(document);
    if (!loaded.ok()) {
      std::string problems;
      for (const auto& p : loaded.problems) {
        problems += config::to_string(p) + "\n";
      }
      throw std::invalid_argument("test config: " + problems);
    }
    return std::make_shared<const config::Config>(std::move(*loaded.config));
  }

  std::shared_ptr<const config::Config> config_;
  store::MemoryStore store_;
  breaker::BreakerRegistry breakers_;
  health::HealthRegistry health_;

 public:
  metrics::Metrics metrics;

 private:
  insight::TopUsersRegistry top_users_;
  proxy::ConfigSync sync_;
  proxy::SnapshotSource snapshots_;

 public:
  proxy::ConnectionGate gate;

 private:
  log::AccessLog access_log_;

 public:
  proxy::Services services;
  proxy::WorkerView view;
  proxy::BalanceCursor cursor;
  proxy::ContextPool contexts;
  proxy::SessionList sessions;
  // As in the Worker: destroying the io_context destroys pending handlers and suspended session
  // frames, which use what is declared above (metrics, contexts, memory); the I/O objects below
  // go first.
  boost::asio::io_context ioc{1};
  proxy::DeadlineSweep sweep;
  proxy::UpstreamPool<TestStream> pool;
  TestConnector connector;
  proxy::SessionEnv env;
  proxy::UpstreamContext<TestStream> upstream;
};

/// A minimal gateway config: one backend "b" at `endpoints`, one route "all" on "/", no access
/// log; the caller adds to it.
inline nlohmann::json world_config(const std::vector<std::string>& endpoints = {"10.0.0.1:80"}) {
  return {
      {"access_log", {{"enabled", false}}},
      {"backends", {{"b", {{"endpoints", endpoints}, {"timeout_ms", 1000}}}}},
      {"routes", nlohmann::json::array({{{"name", "all"}, {"prefix", "/"}, {"backend", "b"}}})},
  };
}

}  // namespace sluice::testing
