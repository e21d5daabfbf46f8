// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/core/keyed_hash.hpp"
#include "gateway/limiter/sliding_window.hpp"
#include "gateway/store/redis_protocol.hpp"

// What the Redis store writes to and reads from Redis: key names, the shared hash key, and the
// sliding-window script's replies. Stateless functions; thread-safe.
namespace sluice::store {

/// The hash of a 32-hex-digit key (as kept in `sluice:hash-key`), or nullopt.
[[nodiscard]] std::optional<core::KeyedHash> hash_from_hex(std::string_view hex);
/// `sluice:{POLICY:HASH}` followed by `suffix`: the hash tag keeps a window on one Redis Cluster
/// slot.
[[nodiscard]] std::string window_key(std::string_view policy, std::uint64_t key_hash,
                                     std::string_view suffix = {});

/// Key `index` of a sliding-window call on `count` keys, whose reply holds five integers per key
/// {allowed, count, limit, reset_ms, retry_after_ms}, as a decision. nullopt for anything else
/// (a reply of another size is wrong for every key).
[[nodiscard]] std::optional<limiter::LimitDecision> decision_from(const RedisReply& reply,
                                                                  std::size_t index,
                                                                  std::size_t count);
/// Key `index` of an inspecting call on `count` keys as that key's state.
[[nodiscard]] std::optional<limiter::KeyState> state_from(const RedisReply& reply,
                                                          std::size_t index, std::size_t count);

}  // namespace sluice::store
