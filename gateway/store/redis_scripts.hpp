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

/// The bucketed sliding window of the memory store, one Redis string per (policy, key); one call
/// decides a batch of keys in order (a key twice in a batch is counted twice, as two calls).
///   KEYS     the windows: a 32-byte little-endian header (uint32 window_ms, uint32 buckets,
///            double newest bucket number, double oldest bucket holding a count or 0, uint32
///            total, uint32 "fresh": counts of the newest bucket not yet in its slot) and a ring
///            of BUCKETS uint32 counters (bucket number floor(now_ms / width_ms) lives at slot
///            number % BUCKETS). A fixed size: a count in the newest bucket rewrites 16 bytes of
///            the header in place (SETRANGE); a new bucket folds `fresh` into its slot and
///            touches the slots that changed, not all of them (only when the oldest count leaves
///            does it search the ring for the next). A decision that changes nothing (a denial,
///            an inspection) writes nothing.
///   ARGV     the number of shapes S; S triples (limit after any override, window_ms,
///            buckets); then one code per key, in the order of KEYS: 2 * its shape's index
///            (0-based) + mode (1 = decide and count, 0 = inspect only). A batch's keys mostly
///            share one policy, so it sends one triple rather than three numbers per key.
///   returns  five integers per key, in the order of KEYS: allowed (0/1), count in the window
///            after this request, limit, reset_ms, retry_after_ms
/// Time is one Redis TIME per call, so replicas never disagree on the clock. Expired buckets are
/// deleted; a changed shape carries the in-window total into the current bucket
/// (docs/behaviour.md "Precise semantics"); the string expires a window plus a bucket after the
/// first write of its newest bucket (set once per bucket: that outlasts every count in it).
[[nodiscard]] const RedisScript& sliding_window_script();

/// The replica heartbeat of `on_error: local_share`: a sorted set of replica ids scored by
/// expiry time.
///   KEYS[1]  the set; ARGV: replica id, ttl_ms
///   returns  the number of live replicas (this one included)
[[nodiscard]] const RedisScript& heartbeat_script();

}  // namespace sluice::store
