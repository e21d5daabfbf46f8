// SPDX-License-Identifier: Apache-2.0
// HTTP/2 end to end: the input is the client's frames after the connection preface (added when
// the input does not start with it), through the HTTP/2 session into the same data path.
#include <string>

#include "tests/fuzz/fuzz_targets.hpp"
#include "tests/fuzz/fuzz_world.hpp"

namespace sluice::fuzz {

int http2_frames(Input input) {
  constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  std::string bytes(text_of(input));
  if (!bytes.starts_with(kPreface)) {
    bytes.insert(0, kPreface);
  }
  auto world = make_http_world();
  queue_upstream_answers(*world);
  run_client(*world, bytes, true);
  return 0;
}

}  // namespace sluice::fuzz
