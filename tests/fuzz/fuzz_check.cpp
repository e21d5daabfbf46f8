// SPDX-License-Identifier: Apache-2.0
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/fuzz_targets.hpp"

namespace sluice::fuzz {

namespace detail {

void fail(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", condition, file, line);
  std::abort();
}

}  // namespace detail

void quiet_logs() {
  spdlog::set_level(spdlog::level::off);
}

}  // namespace sluice::fuzz
