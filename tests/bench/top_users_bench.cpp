// SPDX-License-Identifier: Apache-2.0
// The heavy hitters' costs (docs/benchmarks.md, "Operator insight"; decision 0018): what the
// limit step adds to each limited route's request on its worker, a push into the worker's
// UserSampleRing (and the user's keyed hash, which the request pays for only when the access
// log is off: the log's `user` label needs that hash anyway); and what the control thread pays
// per sample to drain the rings into the sketches, over 10,000 users whose traffic is
// Zipf-skewed (most samples from a few users: the entry is found and incremented) or uniform
// (the worst case: nearly every sample replaces the smallest entry).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
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

constexpr std::size_t kTopBatch = 4096;  // samples per drain: a 50 ms drain at 82k req/s

/// The worker's cost: one decision queued for the sketches (UserSampleRing::push). The ring is
/// drained every kTopBatch samples by a consumer that does nothing with them (under 1 ns a
/// sample), as the control thread empties it every 50 ms.
void BM_TopUsersPush(benchmark::State& state) {
  insight::UserSampleRing ring(insight::TopUsersRegistry::kRingCapacity);
  const std::vector<std::uint64_t> keys = hashed(user_stream(false));
  std::size_t i = 0;
  const core::TimePoint now = kTopClock.now();  // the request's start, read by the session
  for (auto _ : state) {
    ring.push({.user = keys[i & (kTopStream - 1)], .at = now, .sketch = 1});
    if ((++i & (kTopBatch - 1)) == 0) {
      ring.drain([](const insight::UserSample& s) { benchmark::DoNotOptimize(s.user); });
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TopUsersPush);

// The user's keyed hash (SipHash-1-3 of "user-N") and the push: the worker's cost with the
// access log off, where nothing else hashes the user.
void BM_TopUsersHashAndPush(benchmark::State& state) {
  insight::UserSampleRing ring(insight::TopUsersRegistry::kRingCapacity);
  const std::vector<std::uint64_t> users = user_stream(true);
  const core::KeyedHash hash = fixed_hash();
  KeyBuffer buffer;
  std::size_t i = 0;
  const core::TimePoint now = kTopClock.now();
  for (auto _ : state) {
    ring.push({.user = hash(buffer.format(users[i & (kTopStream - 1)])), .at = now, .sketch = 1});
    if ((++i & (kTopBatch - 1)) == 0) {
      ring.drain([](const insight::UserSample& s) { benchmark::DoNotOptimize(s.user); });
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TopUsersHashAndPush);

// The control thread's cost per sample: a batch of kTopBatch samples drained from a worker's
// ring into the policy's sketch (TopUsersRegistry::drain, TopUsers::count). Arg: 1 = Zipf
// traffic (the entry is usually found), 0 = uniform (nearly every sample replaces an entry).
void BM_TopUsersDrain(benchmark::State& state) {
  insight::TopUsersRegistry registry(kTopClock, 1);
  const std::uint32_t sketch = registry.sync("bench", 60s);
  const std::vector<std::uint64_t> keys = hashed(user_stream(state.range(0) != 0));
  insight::UserSampleRing& ring = registry.ring(0);
  std::size_t i = 0;
  const core::TimePoint now = kTopClock.now();
  for (auto _ : state) {
    state.PauseTiming();
    for (std::size_t n = 0; n < kTopBatch; ++n) {
      ring.push({.user = keys[i++ & (kTopStream - 1)], .at = now, .sketch = sketch});
    }
    state.ResumeTiming();
    benchmark::DoNotOptimize(registry.drain());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kTopBatch));
}
BENCHMARK(BM_TopUsersDrain)->Arg(1)->Arg(0)->ArgName("zipf");

// An answer of GET /admin/limits/{policy}/top?n=10 on a full sketch (the control thread's
// cost; the workers do not wait for it).
void BM_TopUsersTop10(benchmark::State& state) {
  insight::TopUsers top(kTopClock, 60s);
  const core::TimePoint now = kTopClock.now();
  for (const std::uint64_t key : hashed(user_stream(true))) {
    top.count(key, false, now);
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(top.top(10));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TopUsersTop10);

}  // namespace
}  // namespace sluice::bench
