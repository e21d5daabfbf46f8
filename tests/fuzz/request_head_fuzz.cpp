// SPDX-License-Identifier: Apache-2.0
// The request head end to end: the input is everything a client sends on one connection.
#include "tests/fuzz/fuzz_targets.hpp"
#include "tests/fuzz/fuzz_world.hpp"

namespace sluice::fuzz {

int request_head(Input input) {
  auto world = make_http_world();
  queue_upstream_answers(*world);
  run_client(*world, text_of(input), false);
  return 0;
}

}  // namespace sluice::fuzz
