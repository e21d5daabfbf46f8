// SPDX-License-Identifier: Apache-2.0
#include <benchmark/benchmark.h>

#include <chrono>
#include <stop_token>
#include <thread>

int main(int argc, char** argv) {
  // glibc takes single-threaded fast paths (a mutex costs 3 ns instead of 15 ns here) while a
  // process has one thread. The gateway never has one thread, so neither may its benchmarks.
  std::jthread idle([](const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
