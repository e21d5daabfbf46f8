// SPDX-License-Identifier: Apache-2.0
// Breaker cost per upstream request: admit + record, single-threaded, on the real clock.
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>

#include "gateway/breaker/adaptive_breaker.hpp"
#include "tests/bench/naive_sliding_log.hpp"

namespace sluice::bench {
namespace {

using namespace std::chrono_literals;

const core::SteadyClock kClock;

// Arg 0: every Nth request fails (0 = healthy). With one in two failing the breaker drops
// some requests and draws a random number for every admission.
void BM_AdaptiveBreakerAdmitRecord(benchmark::State& state) {
  core::SystemRandom random;
  auto breaker = breaker::AdaptiveBreaker::create(kClock, random, {});
  const auto fail_every = state.range(0);
  std::int64_t i = 0;
  for (auto _ : state) {
    if (auto admission = breaker->try_admit()) {
      if (fail_every == 0 || ++i % fail_every != 0) {
        std::move(*admission).succeeded();
      }
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["drops"] = static_cast<double>(breaker->snapshot().drops);
}
BENCHMARK(BM_AdaptiveBreakerAdmitRecord)->Arg(0)->Arg(2);

// The same with the timestamps a caller already holds: the data path reads the clock at
// request start and at response for its latency histograms and hands those times over. The
// loop advances a synthetic time instead of reading the clock (two reads are 2 x ~19 ns here).
void BM_AdaptiveBreakerAdmitRecordGivenTimes(benchmark::State& state) {
  core::SystemRandom random;
  auto breaker = breaker::AdaptiveBreaker::create(kClock, random, {});
  const auto fail_every = state.range(0);
  std::int64_t i = 0;
  core::TimePoint now = kClock.now();
  for (auto _ : state) {
    now += 1us;
    if (auto admission = breaker->try_admit(now)) {
      if (fail_every == 0 || ++i % fail_every != 0) {
        std::move(*admission).succeeded(now);
      } else {
        std::move(*admission).failed(now);
      }
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AdaptiveBreakerAdmitRecordGivenTimes)->Arg(0)->Arg(2);

// One backend's breaker shared by every worker thread: the production shape.
std::shared_ptr<breaker::AdaptiveBreaker> g_breaker;
core::SystemRandom g_random;

void BM_AdaptiveBreakerShared(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_breaker = breaker::AdaptiveBreaker::create(kClock, g_random, {});
  }
  for (auto _ : state) {
    if (auto admission = g_breaker->try_admit()) {
      std::move(*admission).succeeded();
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AdaptiveBreakerShared)->Threads(1)->Threads(2)->UseRealTime();

std::unique_ptr<NaiveBreaker> g_naive_breaker;

void BM_NaiveBreakerShared(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_naive_breaker = std::make_unique<NaiveBreaker>(kClock, 10s);
  }
  for (auto _ : state) {
    if (g_naive_breaker->admit(g_random.next_unit())) {
      g_naive_breaker->record(true);
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NaiveBreakerShared)->Threads(1)->Threads(2)->UseRealTime();

void BM_NaiveBreakerAdmitRecord(benchmark::State& state) {
  core::SystemRandom random;
  NaiveBreaker breaker(kClock, 10s);
  const auto fail_every = state.range(0);
  std::int64_t i = 0;
  for (auto _ : state) {
    if (breaker.admit(random.next_unit())) {
      breaker.record(fail_every == 0 || ++i % fail_every != 0);
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NaiveBreakerAdmitRecord)->Arg(0)->Arg(2);

}  // namespace
}  // namespace sluice::bench
