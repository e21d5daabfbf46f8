// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "gateway/config/config.hpp"
#include "gateway/core/keyed_hash.hpp"

namespace sluice::log {

/// The shortest secret accepted for the `user` hash.
inline constexpr std::size_t kMinUserHashSecret = 16;

/// The keyed hash of the access log's `user` field (docs/access-log.md) from the environment
/// variable `config.user_hash_key_env` names, so hashes agree across replicas and restarts.
/// nullopt with `error` empty when no variable is configured (the caller picks a random key);
/// nullopt with `error` set (naming the variable) when it is configured but unset, empty, or
/// shorter than kMinUserHashSecret bytes: the gateway refuses to start. Reads the environment:
/// call before other threads start.
[[nodiscard]] std::optional<core::KeyedHash> user_hash_from_env(
    const config::AccessLogConfig& config, std::string& error);

/// The access log's `user` label of the user whose keyed hash is `hash`: its low 48 bits as 12
/// lowercase hex digits. The admin API's heavy hitters show the same label (docs/operating.md
/// "Heavy hitters").
[[nodiscard]] std::array<char, 12> user_label(std::uint64_t hash) noexcept;

}  // namespace sluice::log
