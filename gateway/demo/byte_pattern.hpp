// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

// The fixed byte pattern of the demo backend's `/bytes/{n}` bodies, also used by the test
// support to generate upload bodies and to check downloads without storing them.
namespace sluice::demo {

/// 64 printable characters; 64 divides every piece size we use (64 KiB), so each full piece of
/// a pattern stream is the same bytes.
inline constexpr std::string_view kPatternAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Size of one streamed piece (read and write buffers of the streaming routes).
inline constexpr std::size_t kPieceBytes = std::size_t{64} * 1024;

static_assert(kPieceBytes % kPatternAlphabet.size() == 0);

/// The byte at `offset` of a pattern stream.
[[nodiscard]] constexpr char pattern_byte(std::uint64_t offset) noexcept {
  return kPatternAlphabet[offset % kPatternAlphabet.size()];
}

}  // namespace sluice::demo
