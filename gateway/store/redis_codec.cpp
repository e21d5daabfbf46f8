// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/redis_codec.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <limits>

namespace sluice::store {
namespace {

using std::chrono::milliseconds;

constexpr std::string_view kHex = "0123456789abcdef";

/// A duration the script reported, within [0, one year]: a broken or hostile server's value
/// must not overflow the conversion to the clock's finer ticks (found by the redis_reply fuzz
/// target), and no window lasts longer.
milliseconds script_ms(std::int64_t ms) {
  constexpr std::int64_t kYear = 365LL * 24 * 3600 * 1000;
  return milliseconds(std::clamp<std::int64_t>(ms, 0, kYear));
}

struct ScriptReply {
  std::int64_t allowed = 0;
  std::int64_t count = 0;
  std::int64_t limit = 0;
  std::int64_t reset_ms = 0;
  std::int64_t retry_ms = 0;
};

constexpr std::size_t kPerKey = 5;

std::optional<ScriptReply> script_reply(const RedisReply& reply, std::size_t index,
                                        std::size_t count) {
  if (reply.type != RedisReply::Type::kArray || index >= count ||
      reply.elements.size() != kPerKey * count) {
    return std::nullopt;
  }
  std::array<std::int64_t, kPerKey> v{};
  for (std::size_t i = 0; i < v.size(); ++i) {
    const RedisReply& element = reply.elements[kPerKey * index + i];
    if (element.type != RedisReply::Type::kInteger) {
      return std::nullopt;
    }
    v[i] = element.integer;
  }
  return ScriptReply{v[0], v[1], v[2], v[3], v[4]};
}

std::uint32_t remaining_of(std::int64_t limit, std::int64_t count) {
  // Whatever a broken Redis answers: both within [0, 2^32 - 1] before the subtraction, which
  // then neither overflows nor wraps.
  constexpr std::int64_t kMost = std::numeric_limits<std::uint32_t>::max();
  const std::int64_t l = std::clamp<std::int64_t>(limit, 0, kMost);
  const std::int64_t c = std::clamp<std::int64_t>(count, 0, kMost);
  return c < l ? static_cast<std::uint32_t>(l - c) : 0U;
}

}  // namespace

std::optional<core::KeyedHash> hash_from_hex(std::string_view hex) {
  core::KeyedHash::Key key{};
  if (hex.size() != key.size() * 2) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < key.size(); ++i) {
    unsigned value = 0;
    const char* first = hex.data() + 2 * i;
    if (std::from_chars(first, first + 2, value, 16).ptr != first + 2) {
      return std::nullopt;
    }
    key[i] = static_cast<std::uint8_t>(value);
  }
  return core::KeyedHash(key);
}

std::string window_key(std::string_view policy, std::uint64_t key_hash, std::string_view suffix) {
  // Built in one allocation: exact mode names a window per decision, hybrid per key exchanged.
  constexpr std::string_view kPrefix = "sluice:{";
  constexpr std::size_t kHexDigits = 16;
  std::string name;
  name.reserve(kPrefix.size() + policy.size() + 1 + kHexDigits + 1 + suffix.size());
  name.append(kPrefix).append(policy).push_back(':');
  const std::size_t hex_at = name.size();
  name.append(kHexDigits, '0');
  for (std::size_t i = kHexDigits; i-- > 0;) {
    name[hex_at + i] = kHex[key_hash & 0xFU];
    key_hash >>= 4U;
  }
  name.push_back('}');
  name.append(suffix);
  return name;
}

std::optional<limiter::LimitDecision> decision_from(const RedisReply& reply, std::size_t index,
                                                    std::size_t count) {
  const auto r = script_reply(reply, index, count);
  if (!r) {
    return std::nullopt;
  }
  limiter::LimitDecision d;
  d.allowed = r->allowed == 1;
  d.limit = static_cast<std::uint32_t>(r->limit);
  d.remaining = d.allowed ? remaining_of(r->limit, r->count) : 0U;
  d.reset = script_ms(r->reset_ms);
  d.retry_after = script_ms(r->retry_ms);
  return d;
}

std::optional<limiter::KeyState> state_from(const RedisReply& reply, std::size_t index,
                                            std::size_t count) {
  const auto r = script_reply(reply, index, count);
  if (!r) {
    return std::nullopt;
  }
  return limiter::KeyState{.count = static_cast<std::uint32_t>(r->count),
                           .limit = static_cast<std::uint32_t>(r->limit),
                           .remaining = remaining_of(r->limit, r->count),
                           .reset = script_ms(r->reset_ms)};
}

}  // namespace sluice::store
