// SPDX-License-Identifier: Apache-2.0
// Limiter decision cost: one hot key (1 and 2 threads, distinct keys per thread) and a million
// keys chosen uniformly, for the memory store and the naive sliding log, on the real clock.
#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gateway/store/memory_store.hpp"
#include "tests/bench/bench_keys.hpp"
#include "tests/bench/naive_sliding_log.hpp"

namespace sluice::bench {
namespace {

using namespace std::chrono_literals;

const core::SteadyClock kClock;
constexpr std::uint64_t kMillion = 1'000'000;

limiter::Policy policy(std::uint32_t requests, std::uint32_t buckets) {
  limiter::Policy p;
  p.name = "bench";
  p.requests = requests;
  p.window = 60s;
  p.buckets = buckets;
  return p;
}

/// A per-thread key ("hot-0", "hot-1", ...): distinct keys, so threads share nothing but the
/// store (with this fixed hash key they also land in distinct shards).
std::string thread_key(const benchmark::State& state) {
  return "hot-" + std::to_string(state.thread_index());
}

// ---- one hot key ------------------------------------------------------------------------
// Arg 0: requests per 60 s. 4e9: every decision admits (the counting path). 100: after the
// first 100 every decision denies (the limited path, with its Retry-After computation).

std::unique_ptr<store::MemoryStore> g_store;
store::PolicyId g_policy;

void BM_MemoryStoreHotKey(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_store = std::make_unique<store::MemoryStore>(
        kClock, store::MemoryStore::Options{.max_keys = kMillion, .shards = 0}, fixed_hash());
    g_policy = g_store->apply(policy(static_cast<std::uint32_t>(state.range(0)), 10));
  }
  const std::string key = thread_key(state);
  for (auto _ : state) {
    benchmark::DoNotOptimize(g_store->decide_now(g_policy, key));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MemoryStoreHotKey)
    ->Arg(4'000'000'000)
    ->Arg(100)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

std::unique_ptr<NaiveSlidingLog> g_naive;

void BM_NaiveSlidingLogHotKey(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_naive =
        std::make_unique<NaiveSlidingLog>(kClock, static_cast<std::uint32_t>(state.range(0)), 60s);
  }
  const std::string key = thread_key(state);
  for (auto _ : state) {
    benchmark::DoNotOptimize(g_naive->decide(key));
  }
  state.SetItemsProcessed(state.iterations());
}
// The admitting naive log grows by one entry per decision: cap its memory with a limit that
// keeps it admitting for the length of a run but not forever.
BENCHMARK(BM_NaiveSlidingLogHotKey)
    ->Arg(100'000'000)
    ->Arg(100)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

// ---- a million keys, uniform --------------------------------------------------------------

void BM_MemoryStoreMillionKeys(benchmark::State& state) {
  store::MemoryStore store(kClock, {.max_keys = 2 * kMillion, .shards = 0}, fixed_hash());
  const store::PolicyId id = store.apply(policy(1'000'000, 10));
  KeyBuffer key;
  for (std::uint64_t i = 0; i < kMillion; ++i) {
    store.decide_now(id, key.format(i));
  }
  std::uint64_t rng = 7;
  for (auto _ : state) {
    benchmark::DoNotOptimize(store.decide_now(id, key.format(next_random(rng) % kMillion)));
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["tracked_keys"] = static_cast<double>(store.stats().tracked_keys);
}
BENCHMARK(BM_MemoryStoreMillionKeys)->Unit(benchmark::kNanosecond);

void BM_NaiveSlidingLogMillionKeys(benchmark::State& state) {
  NaiveSlidingLog naive(kClock, 1'000'000, 60s);
  KeyBuffer key;
  for (std::uint64_t i = 0; i < kMillion; ++i) {
    naive.decide(key.format(i));
  }
  std::uint64_t rng = 7;
  for (auto _ : state) {
    benchmark::DoNotOptimize(naive.decide(key.format(next_random(rng) % kMillion)));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NaiveSlidingLogMillionKeys)->Unit(benchmark::kNanosecond);

// The floor under any million-key decision on this machine: the same key generation and hash,
// then one read-modify-write of a random cache line in an array as large as the store's table.
// Whatever the table design, a key that is not in the caches costs at least this.
void BM_MillionKeysMemoryFloor(benchmark::State& state) {
  constexpr std::size_t kLines = kMillion * 11 / 8;  // ~88 MB of 64-byte lines, like the table
  std::vector<std::array<std::uint64_t, 8>> lines(kLines);
  const core::KeyedHash hash = fixed_hash();
  KeyBuffer key;
  std::uint64_t rng = 7;
  for (auto _ : state) {
    const std::uint64_t h = hash(key.format(next_random(rng) % kMillion));
    auto& line = lines[h % kLines];
    line[0] += 1;
    benchmark::DoNotOptimize(line[0]);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MillionKeysMemoryFloor);

// The key-formatting and random-number cost included in both million-key loops.
void BM_KeyGenerationOnly(benchmark::State& state) {
  KeyBuffer key;
  std::uint64_t rng = 7;
  for (auto _ : state) {
    benchmark::DoNotOptimize(key.format(next_random(rng) % kMillion));
  }
}
BENCHMARK(BM_KeyGenerationOnly);

}  // namespace
}  // namespace sluice::bench
