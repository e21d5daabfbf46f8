// SPDX-License-Identifier: Apache-2.0
// sluice_ws_load: closed-loop WebSocket echo load, and idle WebSocket connections held open, for
// tests/bench/peer_compare.sh's `websocket` section (docs/benchmarks.md). One io_context per
// thread; connections are spread over the threads and each lives on one; every message is an
// asynchronous write and read (C++20 coroutines), so nothing blocks per message.
#include <sys/resource.h>

#include <algorithm>
#include <barrier>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <latch>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/bench/ws_load_conn.hpp"
#include "tests/bench/ws_load_options.hpp"

namespace sluice::bench {
namespace {

constexpr auto kAsTuple = net::as_tuple(net::use_awaitable);
/// After the measured time, connections finish their message and close within this long;
/// the stragglers are then cut (and counted as errors).
constexpr std::chrono::seconds kFinishGrace{15};
/// Every 16th echo is compared byte for byte; the others by length, type and end bytes.
constexpr std::uint64_t kFullCheckEvery = 16;
/// Connections each thread opens at once in idle mode (bounds the SYNs in flight).
constexpr std::size_t kOpenParallel = 64;

/// The measured window, set once every connection is open (load mode).
struct Schedule {
  Clock::time_point measure_from;
  Clock::time_point end;
};

/// The closed loop of one connection: a message, its echo, the next, until the window ends.
net::awaitable<void> load_loop(Conn& conn, const Schedule& schedule, Tally& tally) {
  constexpr std::string_view kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";  // valid UTF-8
  for (std::uint64_t seq = 0;; ++seq) {
    const auto sent_at = Clock::now();
    if (sent_at >= schedule.end) {
      break;
    }
    if (!conn.payload.empty()) {  // a stale or misrouted echo shows in its end bytes
      conn.payload.front() = kAlphabet[seq % kAlphabet.size()];
      conn.payload.back() = kAlphabet[(seq / 7) % kAlphabet.size()];
    }
    if (!co_await exchange(conn, seq % kFullCheckEvery == 0, tally)) {
      co_return;
    }
    const auto done = Clock::now();
    ++tally.messages_total;
    if (sent_at >= schedule.measure_from && done <= schedule.end) {
      ++tally.messages;
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(done - sent_at);
      tally.latencies_us.push_back(static_cast<std::uint32_t>(us.count()));
    }
  }
  co_await close_conn(conn, tally);
}

/// Runs `worker` until its work is done or `deadline`; then cuts whatever is left.
void run_until(Worker& worker, Clock::time_point deadline) {
  worker.ioc.restart();
  worker.ioc.run_until(deadline);
  if (!worker.ioc.stopped()) {
    for (auto& conn : worker.conns) {
      beast::get_lowest_layer(conn->ws).close();  // pending operations end with an error
    }
    worker.ioc.restart();
    worker.ioc.run();
  }
}

std::string message_pattern(std::size_t size) {
  std::string payload(size, ' ');
  for (std::size_t i = 0; i < size; ++i) {
    payload[i] = static_cast<char>('A' + (i % 26));
  }
  return payload;
}

std::uint32_t percentile(std::vector<std::uint32_t>& values, double fraction) {
  if (values.empty()) {
    return 0;
  }
  const auto index = static_cast<std::size_t>(fraction * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(index),
                   values.end());
  return values[index];
}

/// Load mode: connect everything, then warm-up + measured window on every connection.
int run_load(const WsLoadOptions& options, const tcp::resolver::results_type& endpoints,
             std::vector<std::unique_ptr<Worker>>& workers) {
  Schedule schedule;
  std::barrier opened(static_cast<std::ptrdiff_t>(workers.size()), [&]() noexcept {
    schedule.measure_from = Clock::now() + options.warmup;
    schedule.end = schedule.measure_from + options.duration;
  });
  const std::string payload = message_pattern(options.size);
  std::vector<std::thread> threads;
  threads.reserve(workers.size());
  for (auto& w : workers) {
    threads.emplace_back([&, &worker = *w] {
      std::vector<Conn*> ready;
      for (auto& conn : worker.conns) {
        net::co_spawn(
            worker.ioc,
            [&, c = conn.get()]() -> net::awaitable<void> {
              if (co_await open_conn(*c, endpoints, options, worker.tally)) {
                ready.push_back(c);
              }
            },
            net::detached);
      }
      worker.ioc.run();
      opened.arrive_and_wait();
      for (Conn* conn : ready) {
        conn->payload = payload;
        net::co_spawn(worker.ioc, load_loop(*conn, schedule, worker.tally), net::detached);
      }
      run_until(worker, schedule.end + kFinishGrace);
    });
  }
  Tally total;
  for (std::size_t i = 0; i < threads.size(); ++i) {
    threads[i].join();
    const Tally& t = workers[i]->tally;
    total.messages += t.messages;
    total.messages_total += t.messages_total;
    total.errors += t.errors;
    total.latencies_us.insert(total.latencies_us.end(), t.latencies_us.begin(),
                              t.latencies_us.end());
  }
  const double seconds = std::chrono::duration<double>(options.duration).count();
  const double per_sec = static_cast<double>(total.messages) / seconds;
  std::printf(
      "{\"connections\":%u,\"size\":%zu,\"messages\":%llu,\"seconds\":%.3f,"
      "\"messages_per_sec\":%.1f,\"mib_per_sec\":%.2f,\"p50_us\":%u,\"p99_us\":%u,"
      "\"errors\":%llu,\"messages_total\":%llu}\n",
      options.connections, options.size, static_cast<unsigned long long>(total.messages), seconds,
      per_sec, per_sec * static_cast<double>(options.size) / (1024.0 * 1024.0),
      percentile(total.latencies_us, 0.50), percentile(total.latencies_us, 0.99),
      static_cast<unsigned long long>(total.errors),
      static_cast<unsigned long long>(total.messages_total));
  return total.errors == 0 && total.messages > 0 ? 0 : 1;
}

/// Idle mode, one connection: open, one echo, then a read left pending for the hold (so pings
/// from the far side get their pong). `settled` counts down either way; true if it is held.
net::awaitable<bool> idle_open(Conn& conn, Worker& worker,
                               const tcp::resolver::results_type& endpoints,
                               const WsLoadOptions& options, std::latch& settled) {
  conn.payload = "sluice_ws_load idle";
  const bool ok = co_await open_conn(conn, endpoints, options, worker.tally) &&
                  co_await exchange(conn, true, worker.tally);
  if (ok) {
    // Held connections stay silent: no idle timeout from now on (idle_hold bounds its check).
    conn.ws.set_option(
        websocket::stream_base::timeout{kStepTimeout, websocket::stream_base::none(), false});
    conn.buffer.consume(conn.buffer.size());
    conn.release_wait.expires_at(Clock::time_point::max());
    conn.ws.async_read(conn.buffer, [&conn](beast::error_code ec, std::size_t /*bytes*/) {
      conn.read_done = true;
      conn.read_error = ec;
      conn.release_wait.cancel();
    });
    ++worker.tally.messages;  // counts the held connections
  }
  settled.count_down();
  co_return ok;
}

/// Idle mode, one held connection: waits for the worker's release, then one more echo proves
/// the tunnel survived the hold, and the connection closes.
net::awaitable<void> idle_hold(Conn& conn, Worker& worker) {
  if (!worker.released) {
    co_await worker.release.async_wait(kAsTuple);  // cancelled at the end of the hold
  }
  const bool alive_before = !conn.read_done;
  if (alive_before) {
    if (auto [ec, n] = co_await conn.ws.async_write(net::buffer(conn.payload), kAsTuple); ec) {
      note_error(worker.tally, "write after the hold", ec);
    }
  }
  if (!conn.read_done) {  // wait for the pending read: the echo, or an error
    conn.release_wait.expires_after(kStepTimeout);
    co_await conn.release_wait.async_wait(kAsTuple);
    if (!conn.read_done) {
      beast::get_lowest_layer(conn.ws).close();  // ends the read; wait for its handler
      conn.release_wait.expires_at(Clock::time_point::max());
      co_await conn.release_wait.async_wait(kAsTuple);
    }
  }
  if (alive_before && !conn.read_error && conn.buffer.size() == conn.payload.size()) {
    ++worker.alive_after_hold;
    co_await close_conn(conn, worker.tally);
  } else {
    note_error(worker.tally, "held connection lost",
               conn.read_error ? conn.read_error : beast::error::timeout);
  }
}

/// Idle mode: open options.idle connections, print `ready` once all are open or failed, hold
/// them for options.hold, check them, close them.
int run_idle(const WsLoadOptions& options, const tcp::resolver::results_type& endpoints,
             std::vector<std::unique_ptr<Worker>>& workers) {
  std::latch settled(options.idle);
  const auto started = Clock::now();
  std::vector<std::thread> threads;
  threads.reserve(workers.size());
  for (auto& w : workers) {
    threads.emplace_back([&, &worker = *w] {
      // kOpenParallel openers per thread, each opening the next connection once its last one
      // is held: the connects and handshakes in flight stay bounded.
      auto next = std::make_shared<std::size_t>(0);
      const auto opener = [&, next]() -> net::awaitable<void> {
        while (*next < worker.conns.size()) {
          Conn& conn = *worker.conns[(*next)++];
          if (co_await idle_open(conn, worker, endpoints, options, settled)) {
            net::co_spawn(worker.ioc, idle_hold(conn, worker), net::detached);
          }
        }
      };
      for (std::size_t i = 0; i < std::min(kOpenParallel, worker.conns.size()); ++i) {
        net::co_spawn(worker.ioc, opener, net::detached);
      }
      worker.ioc.run();
    });
  }
  settled.wait();
  std::uint64_t open_count = 0;
  std::uint64_t failed = 0;
  // Counted once all are settled and before the release, so the workers no longer write
  // these (the latch orders their writes before this read).
  for (const auto& w : workers) {
    open_count += w->tally.messages;
    failed += w->tally.errors;
  }
  const double open_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::cerr << "ready open=" << open_count << " failed=" << failed << " seconds=" << open_seconds
            << std::endl;
  std::this_thread::sleep_for(options.hold);
  for (auto& w : workers) {
    net::post(w->ioc, [&worker = *w] {
      worker.released = true;
      worker.release.cancel();
    });
  }
  std::uint64_t alive = 0;
  std::uint64_t errors = 0;
  for (std::size_t i = 0; i < threads.size(); ++i) {
    threads[i].join();
    alive += workers[i]->alive_after_hold;
    errors += workers[i]->tally.errors;
  }
  std::printf(
      "{\"idle_open\":%llu,\"failed\":%llu,\"alive_after_hold\":%llu,\"errors\":%llu,"
      "\"hold_seconds\":%.3f,\"open_seconds\":%.3f}\n",
      static_cast<unsigned long long>(open_count), static_cast<unsigned long long>(failed),
      static_cast<unsigned long long>(alive), static_cast<unsigned long long>(errors),
      std::chrono::duration<double>(options.hold).count(), open_seconds);
  return errors == 0 && open_count > 0 ? 0 : 1;
}

/// Each connection is a descriptor here: raise the soft limit to the hard one.
void raise_fd_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int run(const WsLoadOptions& options) {
  raise_fd_limit();
  net::io_context resolver_ioc;
  tcp::resolver resolver(resolver_ioc);
  const auto endpoints = resolver.resolve(options.host, options.port);  // throws on failure
  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned i = 0; i < options.threads; ++i) {
    workers.push_back(std::make_unique<Worker>());
  }
  const unsigned count = options.idle > 0 ? options.idle : options.connections;
  for (unsigned i = 0; i < count; ++i) {
    auto& worker = *workers[i % workers.size()];
    worker.conns.push_back(std::make_unique<Conn>(worker.ioc));
  }
  return options.idle > 0 ? run_idle(options, endpoints, workers)
                          : run_load(options, endpoints, workers);
}

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) {
  using namespace sluice::bench;
  const auto parsed = parse_ws_load_options(
      std::span<const char* const>(const_cast<const char* const*>(argv), argc));
  if (!parsed.options) {
    std::cerr << "sluice_ws_load: " << parsed.error << '\n' << ws_load_usage();
    return 2;
  }
  if (parsed.options->help) {
    std::cout << ws_load_usage();
    return 0;
  }
  try {
    return run(*parsed.options);
  } catch (const std::exception& e) {
    std::cerr << "sluice_ws_load: " << e.what() << '\n';
    return 1;
  }
}
