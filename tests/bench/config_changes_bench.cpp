// SPDX-License-Identifier: Apache-2.0
// What one config change costs the control thread as the overrides grow (docs/benchmarks.md,
// "The fleet"): the comparison of two versions that records it (insight::config_changes) and
// the parse of a fleet version's text, ours (config::parse_ordered) beside nlohmann's
// ordered_json::parse, whose member insert scans the object first.
#include <benchmark/benchmark.h>

#include <string>

#include "gateway/config/config_document.hpp"
#include "gateway/config/json_members.hpp"
#include "gateway/fleet/fleet_document.hpp"
#include "gateway/insight/config_changes.hpp"

namespace sluice::bench {
namespace {

using nlohmann::ordered_json;

/// A config's shared part with `overrides` override keys on one policy.
ordered_json with_overrides(std::int64_t overrides) {
  ordered_json config = {{"limits", {{"p", {{"requests", 100}, {"window_ms", 60000}}}}}};
  auto& keys = config["overrides"]["p"];
  keys = ordered_json::object();
  for (std::int64_t i = 0; i < overrides; ++i) {
    keys["user-" + std::to_string(i)] = {{"requests", 7}};
  }
  return config;
}

void BM_ConfigChangesOneNewOverride(benchmark::State& state) {
  const ordered_json before = with_overrides(state.range(0));
  ordered_json after = before;
  after["overrides"]["p"]["one-more"] = {{"requests", 7}};
  const insight::KeyLabel label = [](std::string_view key) { return std::string(key); };
  for (auto _ : state) {
    auto changes = insight::config_changes(before, after, label);
    benchmark::DoNotOptimize(changes);
  }
}
BENCHMARK(BM_ConfigChangesOneNewOverride)->Arg(100)->Arg(1000)->Arg(10000);

/// Arg 0: the overrides; arg 1: 1 for config::parse_ordered, 0 for ordered_json::parse.
void BM_ParseFleetVersion(benchmark::State& state) {
  const std::string text = with_overrides(state.range(0)).dump();
  const bool ours = state.range(1) == 1;
  for (auto _ : state) {
    auto parsed = ours ? config::parse_ordered(text) : ordered_json::parse(text);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_ParseFleetVersion)
    ->ArgNames({"overrides", "linear"})
    ->ArgsProduct({{100, 1000, 10000}, {1, 0}});

/// A whole config (as the fleet benchmark's replicas run) with `overrides` override keys.
ordered_json whole_config(std::int64_t overrides) {
  ordered_json config = ordered_json::parse(R"({
    "listeners": [{"name": "http", "address": "127.0.0.1", "port": 0}],
    "admin": {"address": "127.0.0.1", "port": 0, "persist": false},
    "threads": 1,
    "identity": [{"header": "X-API-Key"}],
    "limits": {"p": {"requests": 1000000, "window_ms": 60000, "buckets": 60}},
    "backends": {"demo": {"endpoints": ["127.0.0.1:9"]}},
    "routes": [{"name": "all", "prefix": "/", "backend": "demo", "limit": "p"}]
  })");
  auto& keys = config["overrides"]["p"];
  keys = ordered_json::object();
  for (std::int64_t i = 0; i < overrides; ++i) {
    keys["w-" + std::to_string(i % 3) + "-" + std::to_string(i)] = {{"requests", 7}};
  }
  return config;
}

/// What validating a fleet version costs (ConfigDocument::from_json, the whole document).
void BM_ValidateWholeConfig(benchmark::State& state) {
  const ordered_json config = whole_config(state.range(0));
  for (auto _ : state) {
    auto loaded = config::ConfigDocument::from_json(config);
    if (!loaded.ok()) {
      state.SkipWithError("invalid config");
      break;
    }
    benchmark::DoNotOptimize(loaded);
  }
}
BENCHMARK(BM_ValidateWholeConfig)->Arg(1000)->Arg(6000)->Unit(benchmark::kMillisecond);

/// What writing a fleet version's text costs (the shared part, dumped).
void BM_DumpSharedPart(benchmark::State& state) {
  const ordered_json config = whole_config(state.range(0));
  for (auto _ : state) {
    auto text = fleet::dump_shared_part(config);
    benchmark::DoNotOptimize(text);
  }
}
BENCHMARK(BM_DumpSharedPart)->Arg(6000)->Unit(benchmark::kMillisecond);

/// What copying a document costs (each admin change edits a copy).
void BM_CopyDocument(benchmark::State& state) {
  const ordered_json config = whole_config(state.range(0));
  for (auto _ : state) {
    ordered_json copy = config;
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(BM_CopyDocument)->Arg(6000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice::bench
