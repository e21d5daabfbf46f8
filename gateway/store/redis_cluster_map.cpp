// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/redis_cluster_map.hpp"

#include <array>
#include <charconv>

namespace sluice::store {
namespace {

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the variant Redis Cluster uses.
constexpr std::array<std::uint16_t, 256> make_crc16_table() {
  std::array<std::uint16_t, 256> table{};
  for (unsigned i = 0; i < 256; ++i) {
    auto crc = static_cast<std::uint16_t>(i << 8U);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000U) != 0 ? static_cast<std::uint16_t>((crc << 1U) ^ 0x1021U)
                                 : static_cast<std::uint16_t>(crc << 1U);
    }
    table[i] = crc;
  }
  return table;
}
constexpr auto kCrc16Table = make_crc16_table();

std::uint16_t crc16(std::string_view bytes) noexcept {
  std::uint16_t crc = 0;
  for (const char c : bytes) {
    const auto index = static_cast<std::uint8_t>((crc >> 8U) ^ static_cast<std::uint8_t>(c));
    crc = static_cast<std::uint16_t>((crc << 8U) ^ kCrc16Table[index]);
  }
  return crc;
}

template <typename T>
std::optional<T> number(std::string_view text) {
  T value{};
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) {
    return std::nullopt;
  }
  return value;
}

/// "host:port", split at the last colon (an IPv6 host has colons of its own).
std::optional<ClusterNode> parse_address(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return std::nullopt;
  }
  const auto port = number<std::uint16_t>(text.substr(colon + 1));
  if (!port || *port == 0) {
    return std::nullopt;
  }
  return ClusterNode{std::string(text.substr(0, colon)), *port};
}

}  // namespace

std::uint16_t cluster_slot(std::string_view key) noexcept {
  const auto open = key.find('{');
  if (open != std::string_view::npos) {
    const auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return static_cast<std::uint16_t>(crc16(key) % kClusterSlots);
}

std::optional<std::vector<SlotRange>> parse_cluster_slots(const RedisReply& reply) {
  using Type = RedisReply::Type;
  if (reply.type != Type::kArray) {
    return std::nullopt;
  }
  std::vector<SlotRange> ranges;
  ranges.reserve(reply.elements.size());
  for (const RedisReply& entry : reply.elements) {
    // [first, last, [host, port, id, ...], replica...]
    if (entry.type != Type::kArray || entry.elements.size() < 3) {
      return std::nullopt;
    }
    const RedisReply& first = entry.elements[0];
    const RedisReply& last = entry.elements[1];
    const RedisReply& master = entry.elements[2];
    if (first.type != Type::kInteger || last.type != Type::kInteger || first.integer < 0 ||
        last.integer < first.integer || last.integer >= kClusterSlots ||
        master.type != Type::kArray || master.elements.size() < 2 ||
        master.elements[0].type != Type::kString || master.elements[1].type != Type::kInteger ||
        master.elements[1].integer <= 0 || master.elements[1].integer > 65535) {
      return std::nullopt;
    }
    ranges.push_back(
        SlotRange{.first = static_cast<std::uint16_t>(first.integer),
                  .last = static_cast<std::uint16_t>(last.integer),
                  .master = ClusterNode{master.elements[0].text,
                                        static_cast<std::uint16_t>(master.elements[1].integer)}});
  }
  return ranges;
}

std::optional<Redirect> parse_redirect(std::string_view error) {
  Redirect redirect;
  if (error.starts_with("MOVED ")) {
    redirect.kind = Redirect::Kind::kMoved;
    error.remove_prefix(6);
  } else if (error.starts_with("ASK ")) {
    redirect.kind = Redirect::Kind::kAsk;
    error.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const auto space = error.find(' ');
  if (space == std::string_view::npos) {
    return std::nullopt;
  }
  const auto slot = number<std::uint16_t>(error.substr(0, space));
  auto node = parse_address(error.substr(space + 1));
  if (!slot || *slot >= kClusterSlots || !node) {
    return std::nullopt;
  }
  redirect.slot = *slot;
  redirect.node = std::move(*node);
  return redirect;
}

}  // namespace sluice::store
