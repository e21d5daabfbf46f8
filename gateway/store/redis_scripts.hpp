// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>

// The server-side Lua scripts of the Redis store. Loaded once per connection (SCRIPT LOAD) and
// called with EVALSHA; a NOSCRIPT reply (a restarted or flushed Redis) is answered by sending
// the same call as EVAL, which also caches the script again.
namespace sluice::store {

struct RedisScript {
  std::string_view source;
  std::string sha1;  ///< lower-case hex, as EVALSHA takes it
};

/// The bucketed sliding window of the memory store, in one Redis hash per (policy, key).
///   KEYS[1]  the hash: "c" = a ring of BUCKETS little-endian uint32 counters (bucket number
///            floor(now_ms / width_ms) lives at slot number % BUCKETS), "h" = the newest bucket
///            number written, "t" = the sum of the ring, "o" = the oldest bucket that holds a
///            count, "g" = "WIDTH_MS:BUCKETS", the shape of the ring. A fixed size, read and
///            written a slot at a time: a decision touches the slots that changed, not all of
///            them (only when the oldest count leaves does it search the ring for the next). A
///            decision that changes nothing (a denial, an inspection) writes nothing.
///   ARGV     limit (after any override), window_ms, buckets, mode ("1" = decide and count,
///            "0" = inspect only)
///   returns  {allowed (0/1), count in the window after this request, limit, reset_ms,
///            retry_after_ms}
/// Time is Redis' TIME, so replicas never disagree on the clock. Expired buckets are deleted; a
/// changed shape carries the in-window total into the current bucket (docs/behaviour.md "Precise
/// semantics"); the hash expires a window plus a bucket after the first write of its newest
/// bucket (set once per bucket: that outlasts every count in it).
[[nodiscard]] const RedisScript& sliding_window_script();

/// The replica heartbeat of `on_error: local_share`: a sorted set of replica ids scored by
/// expiry time.
///   KEYS[1]  the set; ARGV: replica id, ttl_ms
///   returns  the number of live replicas (this one included)
[[nodiscard]] const RedisScript& heartbeat_script();

}  // namespace sluice::store
