// SPDX-License-Identifier: Apache-2.0
// Memory per tracked key: a million keys with one request each, measured as the growth of the
// process's resident set (RSS) and, for the memory store, as the bytes its arrays hold.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "gateway/store/memory_store.hpp"
#include "tests/bench/bench_keys.hpp"
#include "tests/bench/naive_sliding_log.hpp"

namespace sluice::bench {
namespace {

using namespace std::chrono_literals;

const core::SteadyClock kClock;
constexpr std::uint64_t kKeys = 1'000'000;

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t size = 0;
  std::size_t resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// Arg 0: buckets per window.
void BM_MemoryStoreBytesPerKey(benchmark::State& state) {
  for (auto _ : state) {
    malloc_trim(0);
    const std::size_t before = resident_bytes();
    store::MemoryStore store(kClock, {.max_keys = kKeys * 11 / 10, .shards = 0});
    limiter::Policy p;
    p.name = "bench";
    p.requests = 100;
    p.window = 60s;
    p.buckets = static_cast<std::uint32_t>(state.range(0));
    const store::PolicyId id = store.apply(p);
    KeyBuffer key;
    for (std::uint64_t i = 0; i < kKeys; ++i) {
      store.decide_now(id, key.format(i));
    }
    const auto stats = store.stats();
    const double keys = static_cast<double>(stats.tracked_keys);
    state.counters["rss_bytes_per_key"] = static_cast<double>(resident_bytes() - before) / keys;
    state.counters["table_bytes_per_key"] = static_cast<double>(stats.memory_bytes) / keys;
    state.counters["tracked_keys"] = keys;
  }
}
BENCHMARK(BM_MemoryStoreBytesPerKey)
    ->Arg(10)
    ->Arg(60)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_NaiveSlidingLogBytesPerKey(benchmark::State& state) {
  for (auto _ : state) {
    malloc_trim(0);
    const std::size_t before = resident_bytes();
    {
      NaiveSlidingLog naive(kClock, 100, 60s);
      KeyBuffer key;
      for (std::uint64_t i = 0; i < kKeys; ++i) {
        naive.decide(key.format(i));
      }
      state.counters["rss_bytes_per_key"] =
          static_cast<double>(resident_bytes() - before) / static_cast<double>(kKeys);
    }
    malloc_trim(0);
  }
}
BENCHMARK(BM_NaiveSlidingLogBytesPerKey)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice::bench
