// SPDX-License-Identifier: Apache-2.0
// The message-head rules added per request (docs/http-conformance.md): splitting the target by
// its form and checking the Host grammar, for the usual origin-form request and for the
// absolute-form one. Their sum bounds what the rules add to a proxied request's CPU time.
#include <benchmark/benchmark.h>

#include <string_view>

#include "gateway/http1/request_target.hpp"

namespace sluice::bench {
namespace {

constexpr std::string_view kOriginTarget = "/api/v1/users/8f14e45f/orders?page=2&limit=50";
constexpr std::string_view kAbsoluteTarget =
    "http://api.example.test:8443/api/v1/users/8f14e45f/orders?page=2&limit=50";
constexpr std::string_view kHost = "api.example.test:8443";

void BM_RequestTargetOriginForm(benchmark::State& state) {
  for (auto _ : state) {
    auto target = http1::parse_request_target(kOriginTarget);
    benchmark::DoNotOptimize(target);
    bool valid = http1::valid_host(kHost);
    benchmark::DoNotOptimize(valid);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RequestTargetOriginForm);

void BM_RequestTargetAbsoluteForm(benchmark::State& state) {
  for (auto _ : state) {
    auto target = http1::parse_request_target(kAbsoluteTarget);  // checks its authority too
    benchmark::DoNotOptimize(target);
    bool valid = http1::valid_host(kHost);
    benchmark::DoNotOptimize(valid);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RequestTargetAbsoluteForm);

void BM_HostIpv6Literal(benchmark::State& state) {
  for (auto _ : state) {
    bool valid = http1::valid_host("[2001:db8::ff00:42:8329]:8443");
    benchmark::DoNotOptimize(valid);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HostIpv6Literal);

}  // namespace
}  // namespace sluice::bench
