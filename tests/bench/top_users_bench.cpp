// SPDX-License-Identifier: Apache-2.0
// The heavy-hitter sketch's cost per request (docs/benchmarks.md, "Heavy hitters"): what the
// limit step adds to each limited route's request, TopUsers::count(), over 10,000 users whose
// traffic is Zipf-skewed (most requests from a few users: the entry is found and incremented)
// or uniform (the worst case: nearly every request replaces the smallest entry), on 1 and 2
// threads; and the same with the user's keyed hash, which the request pays for only when the
// access log is off (the log's `user` label needs that hash anyway).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "gateway/insight/top_users.hpp"
#include "tests/bench/bench_keys.hpp"

namespace sluice::bench {
namespace {

using namespace std::chrono_literals;

const core::SteadyClock kTopClock;
constexpr std::uint64_t kTopUsers = 10'000;
constexpr std::size_t kTopStream = 1U << 16U;  // a cycle of draws, far longer than the sketch

/// User numbers drawn from Zipf (s = 1) over kTopUsers users, or uniformly: a fixed cycle, so
/// the loop pays for one table read, not for a draw.
std::vector<std::uint64_t> user_stream(bool zipf) {
  std::vector<double> cdf(kTopUsers);
  double sum = 0;
  for (std::uint64_t k = 0; k < kTopUsers; ++k) {
    sum += zipf ? 1.0 / static_cast<double>(k + 1) : 1.0;
    cdf[k] = sum;
  }
  std::vector<std::uint64_t> users(kTopStream);
  std::uint64_t state = 20261126;
  for (auto& user : users) {
    const double u = static_cast<double>(next_random(state) >> 11U) * 0x1.0p-53 * sum;
    user = static_cast<std::uint64_t>(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
  }
  return users;
}

/// The same users as keyed hashes (what the limit step counts).
std::vector<std::uint64_t> hashed(const std::vector<std::uint64_t>& users) {
  const core::KeyedHash hash = fixed_hash();
  KeyBuffer buffer;
  std::vector<std::uint64_t> keys;
  keys.reserve(users.size());
  for (const std::uint64_t user : users) {
    keys.push_back(hash(buffer.format(user)));
  }
  return keys;
}

std::unique_ptr<insight::TopUsers> g_top;

// Arg 0: 1 = Zipf traffic, 0 = uniform. Arg 1: shards (the gateway: the workers' count rounded
// up to a power of two, at most 8). Threads count different users into one sketch.
void BM_TopUsersCount(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_top = std::make_unique<insight::TopUsers>(kTopClock, 60s,
                                                static_cast<std::size_t>(state.range(1)));
  }
  const std::vector<std::uint64_t> keys = hashed(user_stream(state.range(0) != 0));
  std::size_t i = static_cast<std::size_t>(state.thread_index()) * 7919;
  const core::TimePoint now = kTopClock.now();  // the request's start, read by the session
  for (auto _ : state) {
    g_top->count(keys[i++ & (kTopStream - 1)], false, now);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TopUsersCount)->ArgsProduct({{1, 0}, {1}})->ArgNames({"zipf", "shards"})->Threads(1);
BENCHMARK(BM_TopUsersCount)
    ->ArgsProduct({{1, 0}, {2}})
    ->ArgNames({"zipf", "shards"})
    ->Threads(2)
    ->UseRealTime();

// The user's keyed hash (SipHash-1-3 of "user-N") and the count: the cost with the access log
// off, where nothing else hashes the user.
void BM_TopUsersHashAndCount(benchmark::State& state) {
  insight::TopUsers top(kTopClock, 60s, 1);
  const std::vector<std::uint64_t> users = user_stream(true);
  const core::KeyedHash hash = fixed_hash();
  KeyBuffer buffer;
  std::size_t i = 0;
  const core::TimePoint now = kTopClock.now();
  for (auto _ : state) {
    top.count(hash(buffer.format(users[i++ & (kTopStream - 1)])), false, now);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TopUsersHashAndCount);

// An answer of GET /admin/limits/{policy}/top?n=10 on a full sketch (the admin thread's cost,
// while the workers wait for the shard it copies).
void BM_TopUsersTop10(benchmark::State& state) {
  insight::TopUsers top(kTopClock, 60s, static_cast<std::size_t>(state.range(0)));
  const core::TimePoint now = kTopClock.now();
  for (const std::uint64_t key : hashed(user_stream(true))) {
    top.count(key, false, now);
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(top.top(10));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TopUsersTop10)->Arg(1)->Arg(8)->ArgName("shards");

}  // namespace
}  // namespace sluice::bench
