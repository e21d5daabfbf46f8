// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

// Secrets and identifiers others must not guess (the fleet's Redis hash key, a replica's id, the
// per-process user hash key): OpenSSL's CSPRNG (RAND_bytes), never the breaker's xoshiro
// (core/random.hpp), whose state its outputs reveal.
namespace sluice::core {

/// Fills `out` from RAND_bytes. Throws std::runtime_error when OpenSSL has no entropy (it then
/// refuses rather than hand out guessable bytes). Thread-safe.
void secure_random_bytes(std::span<std::uint8_t> out);

/// `bytes` random bytes as 2 × `bytes` lowercase hex digits (secure_random_bytes()).
[[nodiscard]] std::string secure_random_hex(std::size_t bytes);

}  // namespace sluice::core
