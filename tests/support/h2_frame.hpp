// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::testing {

/// One HTTP/2 frame's bytes (RFC 9113 §4.1): the 9-byte header, then `payload`. For tests that
/// send what no well-behaved client library would (floods, resets in a loop, odd settings).
inline std::string h2_frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                            std::string_view payload) {
  std::string f;
  for (const unsigned shift : {16U, 8U, 0U}) {
    f.push_back(static_cast<char>((payload.size() >> shift) & 0xFFU));
  }
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  for (const unsigned shift : {24U, 16U, 8U, 0U}) {
    f.push_back(static_cast<char>((stream >> shift) & 0xFFU));
  }
  f.append(payload);
  return f;
}

}  // namespace sluice::testing
