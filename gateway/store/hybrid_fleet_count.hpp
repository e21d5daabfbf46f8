// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gateway/store/redis_protocol.hpp"

// What Redis holds for one key under `store.mode: "hybrid"` (docs/distributed.md, "Hybrid
// mode"): the fleet's count per bucket, one hash field per bucket.
namespace sluice::store {

/// A policy's window as the exchange names its buckets: a bucket is named by its start, a
/// multiple of `width_ms` on Redis's clock (TIME), so every replica names it alike and a
/// re-tuned window still reads the buckets written under the old one by their start.
struct HybridShape {
  std::int64_t width_ms = 1;
  std::uint32_t buckets = 1;

  /// The start of the bucket `now_ms` falls in.
  [[nodiscard]] std::int64_t bucket_start(std::int64_t now_ms) const noexcept;
  /// The start of the oldest bucket still in the window at `now_ms`: a bucket counts when it
  /// starts at or after it.
  [[nodiscard]] std::int64_t live_from(std::int64_t now_ms) const noexcept;
  [[nodiscard]] std::int64_t window_ms() const noexcept;
};

/// One bucket of a key's hash: its start (Redis' clock) and all replicas' requests in it.
struct FleetBucket {
  std::int64_t start = 0;
  std::uint64_t count = 0;
};

/// An HGETALL of a key's hash, read.
struct FleetCount {
  std::uint64_t live = 0;            ///< all replicas' requests in buckets still in the window
  std::vector<FleetBucket> buckets;  ///< those buckets
  std::vector<std::string> dead;     ///< the fields of buckets that left it (to delete)
};

/// Reads the reply to HGETALL (field: a bucket's start in ms, value: the fleet's count in it)
/// against `live_from`: nullopt for a reply that is not such a hash (an error, a wrong type).
/// A field that does not name a bucket is left alone.
[[nodiscard]] std::optional<FleetCount> read_fleet_count(const RedisReply& reply,
                                                         std::int64_t live_from);

/// Bucket counts as an exchange reads them: inline up to the most an HMGET names and the
/// current bucket's (no allocation per key and exchange).
using BucketCounts = boost::container::small_vector<std::uint64_t, 9>;

/// Reads the reply to HMGET of `fields` bucket fields: each one's count (0 for a bucket nobody
/// pushed into), or nullopt for a reply that is not such an array.
[[nodiscard]] std::optional<BucketCounts> read_bucket_counts(const RedisReply& reply,
                                                             std::size_t fields);

}  // namespace sluice::store
