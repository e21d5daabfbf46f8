// SPDX-License-Identifier: Apache-2.0
// The PROXY protocol header (versions 1 and 2) as the listener reads it.
#include "gateway/proxy/session/proxy_header.hpp"
#include "tests/fuzz/fuzz_targets.hpp"

namespace sluice::fuzz {

int proxy_header(Input input) {
  const std::string_view bytes = text_of(input);
  const proxy::ProxyHeaderParse parsed = proxy::parse_proxy_header(bytes);
  if (parsed.status == proxy::ProxyHeaderStatus::kComplete) {
    // What the listener consumes before the client's own bytes lies within what arrived.
    const std::size_t size = parsed.header.size;
    SLUICE_FUZZ_CHECK(size > 0 && size <= bytes.size());
    // A reader consumes the safe prefix before it has the whole header: never past its end.
    SLUICE_FUZZ_CHECK(proxy::proxy_header_safe_prefix(bytes) <= size);
    // The header alone is the same header, and every shorter start of it asks for more.
    SLUICE_FUZZ_CHECK(proxy::parse_proxy_header(bytes.substr(0, size)).header.size == size);
    for (std::size_t k = 0; k < size; ++k) {
      SLUICE_FUZZ_CHECK(proxy::parse_proxy_header(bytes.substr(0, k)).status ==
                        proxy::ProxyHeaderStatus::kIncomplete);
    }
  }
  SLUICE_FUZZ_CHECK(proxy::proxy_header_safe_prefix(bytes) <= bytes.size());
  return 0;
}

}  // namespace sluice::fuzz
