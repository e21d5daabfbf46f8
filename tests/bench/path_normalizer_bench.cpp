// SPDX-License-Identifier: Apache-2.0
// Path normalization per request (docs/paths.md): the usual case is a path that is already
// normal, which must cost one scan; beside it a path that needs every rule. Each is measured
// next to the obvious implementation (split into std::string segments, process, join).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "gateway/http1/path_normalizer.hpp"
#include "tests/support/naive_path_normalizer.hpp"

namespace sluice::bench {
namespace {

constexpr std::string_view kTypicalPath = "/api/v1/users/8f14e45f/orders/1029384756/items";
constexpr std::string_view kMessyPath = "/api/v1//users/./8f14e45f/%6frders/x/../1029384756/items";

template <typename Normalize>
void run(benchmark::State& state, std::string_view path, Normalize normalize) {
  std::string out;  // one per connection in the gateway: its capacity is reused
  for (auto _ : state) {
    auto status = normalize(path, true, out);
    benchmark::DoNotOptimize(status);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(path.size()));
}

void BM_PathNormalizerUnchanged(benchmark::State& state) {
  run(state, kTypicalPath, http1::normalize_path);
}
BENCHMARK(BM_PathNormalizerUnchanged);

void BM_PathNormalizerRewritten(benchmark::State& state) {
  run(state, kMessyPath, http1::normalize_path);
}
BENCHMARK(BM_PathNormalizerRewritten);

void BM_NaivePathNormalizerUnchanged(benchmark::State& state) {
  run(state, kTypicalPath, testing::naive_normalize_path);
}
BENCHMARK(BM_NaivePathNormalizerUnchanged);

void BM_NaivePathNormalizerRewritten(benchmark::State& state) {
  run(state, kMessyPath, testing::naive_normalize_path);
}
BENCHMARK(BM_NaivePathNormalizerRewritten);

}  // namespace
}  // namespace sluice::bench
