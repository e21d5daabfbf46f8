// SPDX-License-Identifier: Apache-2.0
// The response head and body framing: the input's first byte chooses what the client asks (a
// plain GET twice on one connection, HEAD, an upgrade, a chunked POST, HTTP/1.0), the rest is
// everything the upstream sends back on its connection.
#include <array>
#include <string_view>

#include "tests/fuzz/fuzz_targets.hpp"
#include "tests/fuzz/fuzz_world.hpp"

namespace sluice::fuzz {

int response_head(Input input) {
  static constexpr std::array<std::string_view, 5> kRequests = {
      "GET /api/r HTTP/1.1\r\nHost: a\r\n\r\nGET /api/r2 HTTP/1.1\r\nHost: a\r\n\r\n",
      "HEAD /r HTTP/1.1\r\nHost: a\r\n\r\n",
      "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nhello",
      "POST /r HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
      "GET /r HTTP/1.0\r\n\r\n",
  };
  if (input.empty()) {
    return 0;
  }
  auto world = make_http_world();
  world->connector.responses.emplace_back(text_of(input.subspan(1)));
  run_client(*world, kRequests[input[0] % kRequests.size()], false);
  return 0;
}

}  // namespace sluice::fuzz
