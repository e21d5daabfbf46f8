// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/hybrid_fleet_count.hpp"

#include <algorithm>
#include <charconv>

namespace sluice::store {
namespace {

/// A decimal integer filling all of `text`.
std::optional<std::int64_t> integer_of(const std::string& text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::int64_t HybridShape::bucket_start(std::int64_t now_ms) const noexcept {
  const std::int64_t width = std::max<std::int64_t>(width_ms, 1);
  return now_ms - now_ms % width;
}

std::int64_t HybridShape::live_from(std::int64_t now_ms) const noexcept {
  const std::int64_t width = std::max<std::int64_t>(width_ms, 1);
  return bucket_start(now_ms) - (std::int64_t{std::max<std::uint32_t>(buckets, 1)} - 1) * width;
}

std::int64_t HybridShape::window_ms() const noexcept {
  return std::max<std::int64_t>(width_ms, 1) * std::int64_t{std::max<std::uint32_t>(buckets, 1)};
}

std::optional<FleetCount> read_fleet_count(const RedisReply& reply, std::int64_t live_from) {
  if (reply.type != RedisReply::Type::kArray || reply.elements.size() % 2 != 0) {
    return std::nullopt;
  }
  FleetCount count;
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    const RedisReply& field = reply.elements[i];
    const RedisReply& value = reply.elements[i + 1];
    if (field.type != RedisReply::Type::kString || value.type != RedisReply::Type::kString) {
      return std::nullopt;
    }
    const std::optional<std::int64_t> start = integer_of(field.text);
    const std::optional<std::int64_t> n = integer_of(value.text);
    if (!start || !n) {
      continue;
    }
    if (*start < live_from) {
      count.dead.push_back(field.text);
    } else if (*n > 0) {
      count.live += static_cast<std::uint64_t>(*n);
      count.buckets.push_back({*start, static_cast<std::uint64_t>(*n)});
    }
  }
  return count;
}

std::optional<BucketCounts> read_bucket_counts(const RedisReply& reply, std::size_t fields) {
  if (reply.type != RedisReply::Type::kArray || reply.elements.size() != fields) {
    return std::nullopt;
  }
  BucketCounts counts;
  counts.reserve(fields);
  for (const RedisReply& value : reply.elements) {
    if (value.type == RedisReply::Type::kNil) {
      counts.push_back(0);
      continue;
    }
    const std::optional<std::int64_t> n =
        value.type == RedisReply::Type::kString ? integer_of(value.text) : std::nullopt;
    if (!n) {
      return std::nullopt;
    }
    counts.push_back(*n > 0 ? static_cast<std::uint64_t>(*n) : 0);
  }
  return counts;
}

}  // namespace sluice::store
