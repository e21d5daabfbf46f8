// SPDX-License-Identifier: Apache-2.0
// `sluice replay` throughput (docs/benchmarks.md "What-if replay"): a million lines in the
// gateway's own format (log::AccessLog::format), 10,000 users over three routes, a millisecond
// apart with up to 500 ms of disorder, through a ReplaySession (split, scan, reorder, decide,
// count), in lines per second; and the line reader alone, the fast scanner against
// nlohmann::json.
#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <string>
#include <vector>

#include "gateway/config/config_loader.hpp"
#include "gateway/log/access_log.hpp"
#include "gateway/replay/replay_session.hpp"
#include "tests/bench/bench_keys.hpp"

namespace sluice::bench {
namespace {

constexpr std::size_t kReplayLines = 1'000'000;
constexpr std::uint64_t kReplayUsers = 10'000;

config::Config replay_bench_config() {
  return config::parse_config_text(
             R"({"backends":{"b":{"endpoints":["127.0.0.1:9"]}},
      "limits":{"standard":{"requests":50,"window_ms":60000,"buckets":60},
                "login":{"requests":5,"window_ms":60000,"buckets":12}},
      "routes":[{"name":"login","prefix":"/login","backend":"b","limit":"login"},
                {"name":"api","prefix":"/api","backend":"b","limit":"standard"},
                {"name":"static","prefix":"/","backend":"b"}]})")
      .config.value();
}

/// The synthetic log, made once.
const std::string& replay_bench_log() {
  static const std::string log = [] {
    constexpr std::array<std::string_view, 3> kRoutes{"api", "login", "static"};
    constexpr std::array<std::string_view, 3> kPaths{"/api/items/7", "/login", "/index.html"};
    std::string text;
    text.reserve(kReplayLines * 400);
    std::uint64_t state = 7;
    const auto start = std::chrono::system_clock::time_point(std::chrono::hours(493'000));
    for (std::size_t i = 0; i < kReplayLines; ++i) {
      const std::uint64_t r = next_random(state);
      const std::size_t route = r % 8 == 0 ? 1 : (r % 8 < 6 ? 0 : 2);
      const auto label = replay::user_label_text((r >> 8U) % kReplayUsers * 0x9e3779b1ULL);
      log::AccessRecord rec;
      rec.ts = start + std::chrono::milliseconds(i) - std::chrono::milliseconds((r >> 40U) % 500);
      rec.request_id = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
      rec.method = "GET";
      rec.path = kPaths[route];
      rec.route = kRoutes[route];
      rec.backend = "b";
      rec.endpoint = "10.0.0.7:8080";
      rec.user = std::string_view(label.data(), label.size());
      rec.status = 200;
      rec.bytes_out = 153;
      rec.duration_ms = 0.636;
      rec.upstream_ms = 0.409;
      rec.attempts = 1;
      rec.limit = route == 2 ? "none" : "allowed";
      rec.breaker = "pass";
      rec.client_ip = "203.0.113.9";
      rec.host = "api.example.com";
      rec.protocol = "HTTP/1.1";
      log::AccessLog::append(rec, text);
    }
    return text;
  }();
  return log;
}

/// The whole replay: 1M lines per iteration, fed in 1 MiB pieces as the command reads them.
void BM_ReplayLines(benchmark::State& state) {
  const std::string& log = replay_bench_log();
  const config::Config next = replay_bench_config();
  constexpr std::size_t kPiece = std::size_t{1} << 20U;
  for (auto _ : state) {
    replay::ReplaySession session(next, {});
    for (std::size_t at = 0; at < log.size(); at += kPiece) {
      session.feed(std::string_view(log).substr(at, kPiece));
    }
    session.finish();
    benchmark::DoNotOptimize(session.report());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kReplayLines));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * log.size()));
}
BENCHMARK(BM_ReplayLines)->Unit(benchmark::kMillisecond)->UseRealTime();

/// The first 10,000 lines of the log.
std::vector<std::string_view> replay_bench_sample() {
  std::vector<std::string_view> lines;
  std::string_view rest = replay_bench_log();
  while (lines.size() < 10'000) {
    const auto newline = rest.find('\n');
    lines.push_back(rest.substr(0, newline));
    rest.remove_prefix(newline + 1);
  }
  return lines;
}

void BM_ReplayScanLine(benchmark::State& state) {
  const auto lines = replay_bench_sample();
  std::size_t i = 0;
  replay::LogLine out;
  for (auto _ : state) {
    benchmark::DoNotOptimize(replay::scan_log_line(lines[i++ % lines.size()], out));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ReplayScanLine);

void BM_ReplayJsonLine(benchmark::State& state) {
  const auto lines = replay_bench_sample();
  std::size_t i = 0;
  replay::LogLine out;
  nlohmann::json doc;
  for (auto _ : state) {
    benchmark::DoNotOptimize(replay::parse_log_line_json(lines[i++ % lines.size()], doc, out));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ReplayJsonLine);

}  // namespace
}  // namespace sluice::bench
