// SPDX-License-Identifier: Apache-2.0
// The whole data path in one process, counted: a real proxy::Worker (the gateway's own session,
// steps, exchange and pool) between a blocking keep-alive client and a minimal upstream, on
// loopback. Reports heap allocations per proxied request (every operator new in the process;
// the client and the upstream allocate nothing in their loops, so what is counted is the
// gateway's) and the round-trip time. docs/benchmarks.md, "Allocations per request".
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gateway/app/listen_socket.hpp"
#include "gateway/breaker/breaker_registry.hpp"
#include "gateway/config/config_loader.hpp"
#include "gateway/core/clock.hpp"
#include "gateway/core/random.hpp"
#include "gateway/insight/top_users.hpp"
#include "gateway/log/access_log.hpp"
#include "gateway/log/logging.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/proxy/routing/config_sync.hpp"
#include "gateway/proxy/session/worker.hpp"
#include "gateway/store/memory_store.hpp"
#include "tests/bench/counting_malloc.hpp"

namespace sluice::bench {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

constexpr std::string_view kResponse =
    "HTTP/1.1 200 OK\r\nServer: bench\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n";
constexpr std::string_view kRequest =
    "GET /ok HTTP/1.1\r\nHost: bench.example\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n";

int listen_on_loopback(std::uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 64) != 0) {
    throw std::runtime_error("bench upstream: cannot listen");
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);  // NOLINT: the sockets API
  port = ntohs(addr.sin_port);
  return fd;
}

int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    throw std::runtime_error("bench client: cannot connect");
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

/// Reads until `buffer` holds one whole response to `kRequest` (known length); false at EOF.
bool read_response(int fd, std::array<char, 4096>& buffer) {
  std::size_t have = 0;
  for (;;) {
    const ssize_t n = ::recv(fd, buffer.data() + have, buffer.size() - have, 0);
    if (n <= 0) {
      return false;
    }
    have += static_cast<std::size_t>(n);
    const std::string_view text(buffer.data(), have);
    const auto end = text.find("\r\n\r\n");
    if (end != std::string_view::npos && have >= end + 4 + 3) {
      return true;
    }
  }
}

/// An upstream answering every request head with kResponse: one thread per connection, no
/// allocation per request.
class Upstream {
 public:
  Upstream() : listener_(listen_on_loopback(port_)) {
    accept_thread_ = std::thread([this] {
      for (;;) {
        const int fd = ::accept(listener_, nullptr, nullptr);
        if (fd < 0) {
          return;
        }
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        connections_.emplace_back([fd] { serve(fd); });
      }
    });
  }
  ~Upstream() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    accept_thread_.join();
    for (auto& t : connections_) {
      t.join();
    }
  }
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;
  [[nodiscard]] std::uint16_t port() const { return port_; }

 private:
  static void serve(int fd) {
    std::array<char, 8192> buffer{};
    std::size_t have = 0;
    for (;;) {
      const ssize_t n = ::recv(fd, buffer.data() + have, buffer.size() - have, 0);
      if (n <= 0) {
        break;
      }
      have += static_cast<std::size_t>(n);
      for (;;) {
        const std::string_view text(buffer.data(), have);
        const auto end = text.find("\r\n\r\n");
        if (end == std::string_view::npos) {
          break;
        }
        ::send(fd, kResponse.data(), kResponse.size(), MSG_NOSIGNAL);
        const std::size_t used = end + 4;
        std::memmove(buffer.data(), buffer.data() + used, have - used);
        have -= used;
      }
    }
    ::close(fd);
  }

  std::uint16_t port_ = 0;
  int listener_;
  std::thread accept_thread_;
  std::vector<std::thread> connections_;
};

/// The gateway's data path on one worker thread, assembled as the Gateway does it.
class Gateway {
 public:
  /// `with_top_users`: the limit's heavy hitters are counted (admin.top_users).
  Gateway(std::uint16_t upstream_port, bool with_limit, bool with_top_users = false)
      : config_(make_config(upstream_port, with_limit)),
        store_(clock_, store::MemoryStore::Options{}),
        breakers_(clock_, random_),
        metrics_("bench"),
        top_users_(clock_, 1),
        sync_(store_, breakers_, health_, metrics_, with_top_users ? &top_users_ : nullptr),
        snapshots_(std::make_shared<const proxy::Snapshot>(config_, sync_.apply(*config_))),
        gate_(10000),
        access_log_(config_->access_log),
        services_(clock_, snapshots_, gate_, access_log_, store_,
                  core::KeyedHash::with_random_key(), log::get("proxy")),
        worker_(services_, 0) {
    worker_.attach_store();
    if (with_top_users) {
      worker_.attach_top_users(top_users_.ring(0));
      // The control thread's part: the sketches take the ring's samples every 50 ms.
      drainer_ = std::thread([this] {
        while (!stop_draining_.load()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          top_users_.drain();
        }
      });
    }
    boost::system::error_code ec;
    auto acceptor = app::make_acceptor(
        worker_.context(), tcp::endpoint(net::ip::make_address("127.0.0.1"), 0), false, ec);
    if (ec) {
      throw std::runtime_error("bench gateway: cannot listen");
    }
    port_ = acceptor.local_endpoint().port();
    worker_.add_listener(proxy::Acceptor(std::move(acceptor)), {.name = "bench"});
    worker_.start();
    thread_ = std::thread([this] { worker_.context().run(); });
  }
  ~Gateway() {
    worker_.context().stop();
    thread_.join();
    stop_draining_.store(true);
    if (drainer_.joinable()) {
      drainer_.join();
    }
  }
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;
  [[nodiscard]] std::uint16_t port() const { return port_; }

 private:
  static std::shared_ptr<const config::Config> make_config(std::uint16_t upstream, bool limit) {
    nlohmann::json c = {
        {"listen", {{"address", "127.0.0.1"}, {"port", 0}}},
        {"access_log", {{"enabled", false}}},
        {"identity", nlohmann::json::array({{{"header", "X-API-Key"}}, {{"client_ip", true}}})},
        {"limits", {{"bench", {{"requests", 1000000000}, {"window_ms", 60000}, {"buckets", 60}}}}},
        {"backends",
         {{"up",
           {{"endpoints", {"127.0.0.1:" + std::to_string(upstream)}},
            {"breaker", {{"enabled", limit}}}}}}},
        {"routes", nlohmann::json::array({{{"name", "all"}, {"prefix", "/"}, {"backend", "up"}}})},
    };
    if (limit) {
      c["routes"][0]["limit"] = "bench";
    }
    auto loaded = config::parse_config(c);
    if (!loaded.ok()) {
      throw std::runtime_error("bench gateway: bad config");
    }
    return std::make_shared<const config::Config>(std::move(*loaded.config));
  }

  core::SteadyClock clock_;
  core::SystemRandom random_;
  std::shared_ptr<const config::Config> config_;
  store::MemoryStore store_;
  breaker::BreakerRegistry breakers_;
  health::HealthRegistry health_;
  metrics::Metrics metrics_;
  insight::TopUsersRegistry top_users_;
  proxy::ConfigSync sync_;
  proxy::SnapshotSource snapshots_;
  proxy::ConnectionGate gate_;
  log::AccessLog access_log_;
  proxy::Services services_;
  proxy::Worker worker_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_draining_{false};
  std::thread drainer_;  ///< with top users: drains the ring, as the control thread does
};

/// Keep-alive GETs through the gateway: each iteration sends one request on each of
/// `connections` connections, then reads the answers, so that many requests are in flight at
/// once (as under load, where per-request state cannot be recycled one request at a time).
/// Counters: heap allocations per request (the target: at most 2), and the request rate.
void keep_alive_gets(benchmark::State& state, bool with_top_users) {
  const bool with_limit = state.range(0) != 0;
  const auto connections = static_cast<std::size_t>(state.range(1));
  Upstream upstream;
  Gateway gateway(upstream.port(), with_limit, with_top_users);
  std::vector<int> fds;
  for (std::size_t i = 0; i < connections; ++i) {
    fds.push_back(connect_to(gateway.port()));
  }
  std::array<char, 4096> buffer{};
  const auto round = [&] {
    for (const int fd : fds) {
      ::send(fd, kRequest.data(), kRequest.size(), 0);
    }
    for (const int fd : fds) {
      if (!read_response(fd, buffer)) {
        return false;
      }
    }
    return true;
  };
  const auto close_all = [&] {
    for (const int fd : fds) {
      ::close(fd);
    }
  };
  // Warm up: pools, contexts, the upstream connections, the allocator's caches.
  for (int i = 0; i < 500; ++i) {
    if (!round()) {
      state.SkipWithError("the gateway closed a connection");
      close_all();
      return;
    }
  }
  {
    const std::uint64_t probe = allocation_count();
    auto counted = std::make_unique<std::string>(64, 'x');  // the counter must see this
    benchmark::DoNotOptimize(counted.get());
    if (allocation_count() == probe) {
      state.SkipWithError("allocations are not counted");
      close_all();
      return;
    }
  }
  const std::uint64_t before = allocation_count();
  std::uint64_t requests = 0;
  for (auto _ : state) {
    if (!round()) {
      state.SkipWithError("the gateway closed a connection");
      break;
    }
    requests += connections;
  }
  const std::uint64_t allocations = allocation_count() - before;
  state.counters["allocs_per_request"] =
      requests > 0 ? static_cast<double>(allocations) / static_cast<double>(requests) : 0.0;
  state.SetItemsProcessed(static_cast<std::int64_t>(requests));
  close_all();
}
void proxied_keep_alive_get(benchmark::State& state) {
  keep_alive_gets(state, false);
}
BENCHMARK(proxied_keep_alive_get)
    ->ArgsProduct({{0, 1}, {1, 64}})
    ->ArgNames({"limit_and_breaker", "connections"})
    ->UseRealTime();

// The same with the policy's heavy hitters counted (admin.top_users, docs/benchmarks.md "Heavy
// hitters"): one user (the client address), hashed for the sketch since the access log is off.
void proxied_keep_alive_get_top_users(benchmark::State& state) {
  keep_alive_gets(state, true);
}
BENCHMARK(proxied_keep_alive_get_top_users)
    ->ArgsProduct({{1}, {1, 64}})
    ->ArgNames({"limit_and_breaker", "connections"})
    ->UseRealTime();

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) {
  sluice::log::init("warn");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  sluice::log::shutdown();
  return 0;
}
