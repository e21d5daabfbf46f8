// SPDX-License-Identifier: Apache-2.0
// libFuzzer's entry points for one target: SLUICE_FUZZ_TARGET names it (tests/fuzz/CMakeLists.txt
// compiles this file once per target).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_targets.hpp"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  sluice::fuzz::quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return sluice::fuzz::SLUICE_FUZZ_TARGET(sluice::fuzz::Input(data, size));
}
