// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/store/redis_protocol.hpp"

// What a Redis Cluster client must know of the cluster protocol: which of the 16384 hash slots
// a key is in, the slot map that CLUSTER SLOTS returns, and the MOVED/ASK redirect errors.
// Stateless functions; thread-safe.
namespace sluice::store {

inline constexpr std::uint16_t kClusterSlots = 16384;

/// The hash slot of `key`: CRC16 (XMODEM) mod 16384 of the key, or of its hash tag, the part
/// between the first `{` and the next `}` when that part is not empty.
[[nodiscard]] std::uint16_t cluster_slot(std::string_view key) noexcept;

/// A node address as the cluster announces it. An empty host means "the address you asked".
struct ClusterNode {
  std::string host;
  std::uint16_t port = 0;

  [[nodiscard]] std::string name() const { return host + ":" + std::to_string(port); }
  friend bool operator==(const ClusterNode&, const ClusterNode&) = default;
};

/// One range of slots and the master that serves it.
struct SlotRange {
  std::uint16_t first = 0;
  std::uint16_t last = 0;
  ClusterNode master;
};

/// The ranges of a CLUSTER SLOTS reply; nullopt when the reply is not one.
[[nodiscard]] std::optional<std::vector<SlotRange>> parse_cluster_slots(const RedisReply& reply);

/// A `MOVED <slot> <host>:<port>` or `ASK <slot> <host>:<port>` error reply.
struct Redirect {
  enum class Kind { kMoved, kAsk };
  Kind kind = Kind::kMoved;
  std::uint16_t slot = 0;
  ClusterNode node;
};

/// The redirect an error reply's text names, or nullopt for any other error.
[[nodiscard]] std::optional<Redirect> parse_redirect(std::string_view error);

}  // namespace sluice::store
