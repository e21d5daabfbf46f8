// SPDX-License-Identifier: Apache-2.0
#pragma once

// The base64url of JOSE (RFC 7515 §2, RFC 4648 §5): no padding, no whitespace.

#include <optional>
#include <string>
#include <string_view>

namespace sluice::auth {

/// The bytes `text` encodes, or nullopt when it is not canonical unpadded base64url: a
/// character outside `A-Z a-z 0-9 - _`, a length that leaves one character over, or bits set
/// past the last byte (so one byte string has exactly one encoding, and a token one spelling).
[[nodiscard]] std::optional<std::string> decode_base64url(std::string_view text);

/// `bytes` as unpadded base64url.
[[nodiscard]] std::string encode_base64url(std::string_view bytes);

}  // namespace sluice::auth
