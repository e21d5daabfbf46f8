// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/redis_scripts.hpp"

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

namespace sluice::store {
namespace {

// Lua 5.1 numbers are doubles: milliseconds since 1970 (~1.7e12) and bucket numbers are exact.
// A window is one string (docs/distributed.md "What happens per request"): a 32-byte header
// (window_ms, buckets, newest bucket, oldest bucket with a count or 0, total, fresh counts of
// the newest bucket not yet in its slot) and the ring of 4-byte counts. One GET and at most one
// write per key; the common decision (a count in the newest bucket) writes 16 bytes of the
// header in place with SETRANGE, which keeps the TTL.
constexpr std::string_view kSlidingWindow = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local spack, sunpack, sub, rep, find, floor = struct.pack, struct.unpack, string.sub, string.rep,
  string.find, math.floor
local HEADER = '<I4I4ddI4I4'
local H = 32
local ZERO = '\0\0\0\0'
local out = {}
local o = 0

local function reply(allowed, total, limit, reset, retry)
  out[o + 1] = allowed
  out[o + 2] = total
  out[o + 3] = limit
  out[o + 4] = reset
  out[o + 5] = retry
  o = o + 5
end

-- The count of ring slot `slot` (0-based).
local function count(s, slot)
  return (sunpack('<I4', s, H + 4 * slot + 1))
end

-- The first slot of a..b (a <= b) holding a count, or nil: one search, not a read per slot.
local function first_count(s, a, b)
  local at = find(s, '[^%z]', H + 4 * a + 1)
  if at and at <= H + 4 * b + 4 then return floor((at - H - 1) / 4) end
end

-- The value with `delta` added to ring slot `slot`.
local function add(s, slot, delta)
  local at = H + 4 * slot + 1
  return sub(s, 1, at - 1) .. spack('<I4', sunpack('<I4', s, at) + delta) .. sub(s, at + 4)
end

-- The value with slots a..b (a <= b) set to zero, and the sum of the counts that left.
local function clear(s, a, b)
  local left = 0
  if a == b then
    left = count(s, a)
  else
    local counts = {sunpack('<' .. rep('I4', b - a + 1), s, H + 4 * a + 1)}
    for i = 1, b - a + 1 do left = left + counts[i] end
  end
  if left == 0 then return s, 0 end
  return sub(s, 1, H + 4 * a) .. rep(ZERO, b - a + 1) .. sub(s, H + 4 * b + 5), left
end

-- Milliseconds until enough counts have left the window for `total` to drop below `limit`.
local function retry_after(s, limit, window, n, width, cur, total)
  if limit == 0 then return window end
  local must = total - limit + 1
  local left = 0
  for x = cur - n + 1, cur do
    left = left + count(s, x % n)
    if left >= must then return (x + n) * width - now end
  end
  return 0
end

local function decide(key, limit, window, n, counting)
  local width = window / n
  local cur = floor(now / width)
  local s = redis.call('GET', key)
  local w, b, head, oldest, total, fresh
  if s and #s >= H then w, b, head, oldest, total, fresh = sunpack(HEADER, s) end
  local same = w == window and b == n and #s == H + 4 * n

  if same and head == cur then
    -- The common case: the newest bucket is the current one. Its new counts go to the header's
    -- `fresh`, so the write is 16 bytes in place (the TTL stays).
    if counting and total < limit then
      if oldest == 0 then oldest = cur end
      redis.call('SETRANGE', key, 16, spack('<dI4I4', oldest, total + 1, fresh + 1))
      reply(1, total + 1, limit, (oldest + n) * width - now, 0)
    elseif counting then
      reply(0, total, limit, (oldest + n) * width - now,
            retry_after(add(s, cur % n, fresh), limit, window, n, width, cur, total))
    else
      reply(0, total, limit, total > 0 and (oldest + n) * width - now or 0, 0)
    end
    return
  end

  if same and cur > head and cur - head < n then
    -- A later bucket of the same window: one new value. The newest bucket's fresh counts join
    -- its slot h; the slots of buckets head + 1 .. cur (h + 1 .. h + k, wrapping) held counts
    -- of an earlier lap and leave; cur's slot gets this request's count.
    local k = cur - head
    local h = head % n
    local vh = count(s, h) + fresh
    local left = 0
    for x = head + 1, cur do left = left + count(s, x % n) end
    total = total - left
    if total == 0 then
      oldest = 0
    elseif oldest < cur - n + 1 then
      -- The oldest count left: the next one is in buckets cur - n + 1 .. head - 1 (slots a
      -- onwards, as stored, wrapping at most once), else in head.
      oldest = head
      local len = n - k - 1
      if len > 0 then
        local a = (cur + 1) % n
        local b = a + len - 1
        local slot
        if b < n then
          slot = first_count(s, a, b)
        else
          slot = first_count(s, a, n - 1) or first_count(s, 0, b - n)
        end
        if slot then oldest = cur - n + 1 + (slot - a) % n end
      end
    end
    local c, retry = 0, 0
    if counting and total < limit then
      c = 1
      total = total + 1
      if oldest == 0 then oldest = cur end
    end
    local reset = total > 0 and (oldest + n) * width - now or 0
    -- Slots h .. h + k (wrapping) become vh, k - 1 zeros, c.
    local run = spack('<I4', vh) .. rep(ZERO, k - 1) .. spack('<I4', c)
    local ring
    if h + k < n then
      ring = sub(s, H + 1, H + 4 * h) .. run .. sub(s, H + 4 * (h + k) + 5)
    else
      local m = n - h
      ring = sub(run, 4 * m + 1) .. sub(s, H + 4 * (k + 1 - m) + 1, H + 4 * h) .. sub(run, 1, 4 * m)
    end
    if counting and c == 0 then
      retry = retry_after(spack(HEADER, 0, 0, 0, 0, 0, 0) .. ring, limit, window, n, width, cur,
                          total)
    end
    if total == 0 then
      redis.call('DEL', key)
    elseif c == 1 or left > 0 then
      redis.call('SET', key, spack(HEADER, window, n, cur, oldest, total, 0) .. ring, 'PX',
                 window + width)
    end
    reply(c, total, limit, reset, retry)
    return
  end

  local changed = false  -- the stored counts or shape change
  if same then
    -- The newest bucket's fresh counts join its slot; then the buckets after it up to cur
    -- leave (their slots held counts of an earlier lap).
    if fresh > 0 then s = add(s, head % n, fresh) end
    if cur - head >= n then
      changed = total > 0
      s = sub(s, 1, H) .. rep(ZERO, n)
      total = 0
    elseif cur > head then
      local first, last = (head + 1) % n, cur % n
      local left, more = 0, 0
      if first <= last then
        s, left = clear(s, first, last)
      else
        s, left = clear(s, first, n - 1)
        s, more = clear(s, 0, last)
      end
      total = total - left - more
      changed = left + more > 0
    end
  else
    local ring = rep(ZERO, n)
    total, oldest = 0, 0
    if w and b > 0 and #s == H + 4 * b then
      -- A re-tuned policy: the in-window total under the old shape carries into the current
      -- bucket.
      local old_width = w / b
      local old = {sunpack('<' .. rep('I4', b), s, H + 1)}
      old[head % b + 1] = old[head % b + 1] + fresh
      local old_cur = floor(now / old_width)
      local steps = math.min(math.max(old_cur - head, 0), b)
      for x = old_cur - steps + 1, old_cur do old[(x % b) + 1] = 0 end
      for i = 1, b do total = total + old[i] end
      if total > 0 then
        local slot = cur % n
        ring = sub(ring, 1, 4 * slot) .. spack('<I4', total) .. sub(ring, 4 * slot + 5)
        oldest = cur
      end
    end
    changed = s ~= nil
    s = spack(HEADER, window, n, cur, oldest, total, 0) .. ring
  end

  if total == 0 then
    oldest = 0
  elseif oldest < cur - n + 1 or oldest > cur then
    -- The oldest count left the window: find the next one. Bucket cur - n + 1 lives at slot
    -- (cur + 1) % n; the window runs from there to the end of the ring, then from slot 0.
    local first = (cur + 1) % n
    local at = find(s, '[^%z]', H + 4 * first + 1) or find(s, '[^%z]', H + 1)
    local slot = floor((at - H - 1) / 4)
    if slot >= first then
      oldest = cur - n + 1 + slot - first
    else
      oldest = cur + 1 + slot - first
    end
  end

  local allowed, retry = 0, 0
  if counting and total < limit then
    allowed = 1
    total = total + 1
    if oldest == 0 then oldest = cur end
    s = add(s, cur % n, 1)
    changed = true
  elseif counting then
    retry = retry_after(s, limit, window, n, width, cur, total)
  end

  local reset = 0
  if total > 0 then
    reset = (oldest + n) * width - now
    if changed then
      redis.call('SET', key, spack(HEADER, window, n, cur, oldest, total, 0) .. sub(s, H + 1),
                 'PX', window + width)
    end
  elseif w then
    redis.call('DEL', key)
  end
  reply(allowed, total, limit, reset, retry)
end

local shapes = tonumber(ARGV[1])
local limits, windows, sizes = {}, {}, {}
for x = 1, shapes do
  limits[x] = tonumber(ARGV[3 * x - 1])
  windows[x] = tonumber(ARGV[3 * x])
  sizes[x] = tonumber(ARGV[3 * x + 1])
end
local base = 1 + 3 * shapes
for i = 1, #KEYS do
  local code = tonumber(ARGV[base + i])
  local x = floor(code / 2) + 1
  decide(KEYS[i], limits[x], windows[x], sizes[x], code % 2 == 1)
end
return out
)lua";

constexpr std::string_view kHeartbeat = R"lua(
local ttl = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return redis.call('ZCARD', KEYS[1])
)lua";

std::string sha1_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha1(), nullptr) != 1) {
    throw std::runtime_error("SHA-1 failed");
  }
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    hex.push_back(kHex[digest[i] >> 4U]);
    hex.push_back(kHex[digest[i] & 0xFU]);
  }
  return hex;
}

}  // namespace

const RedisScript& sliding_window_script() {
  static const RedisScript script{kSlidingWindow, sha1_hex(kSlidingWindow)};
  return script;
}

const RedisScript& heartbeat_script() {
  static const RedisScript script{kHeartbeat, sha1_hex(kHeartbeat)};
  return script;
}

}  // namespace sluice::store
