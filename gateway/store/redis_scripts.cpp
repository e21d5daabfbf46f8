// SPDX-License-Identifier: Apache-2.0
#include "gateway/store/redis_scripts.hpp"

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

namespace sluice::store {
namespace {

// Lua 5.1 numbers are doubles: milliseconds since 1970 (~1.7e12) and bucket numbers are exact.
constexpr std::string_view kSlidingWindow = R"lua(
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local counting = ARGV[4] == '1'
local width = window / n
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = math.floor(now / width)
local shape = string.format('%d:%d', width, n)
local zero = '\0\0\0\0'

-- The ring is read and written in place, one 4-byte slot at a time: a decision touches the
-- slots that changed, not all n.
local function get(ring, slot)
  return (struct.unpack('<I4', ring, slot * 4 + 1))
end
local function put(ring, slot, value)
  return string.sub(ring, 1, slot * 4) .. struct.pack('<I4', value) .. string.sub(ring, slot * 4 + 5)
end
local function sum(ring, ring_n)
  local s = 0
  for i = 0, ring_n - 1 do s = s + get(ring, i) end
  return s
end

local stored = redis.call('HMGET', KEYS[1], 'g', 'h', 't', 'c', 'o')
local ring, total
local same_bucket = false  -- the ring's newest bucket is the current one: g, h and TTL are set
local oldest = tonumber(stored[5])  -- the oldest bucket that holds a count
if stored[1] and stored[1] == shape and stored[4] and #stored[4] == 4 * n then
  ring = stored[4]
  total = tonumber(stored[3]) or sum(ring, n)
  local head = tonumber(stored[2])
  same_bucket = head == cur
  if cur - head >= n then
    ring = string.rep(zero, n)
    total = 0
    oldest = nil
  elseif cur > head then
    -- The slots of the buckets after head up to cur held counts of an earlier lap: they leave.
    for b = head + 1, cur do
      local v = get(ring, b % n)
      if v > 0 then
        total = total - v
        ring = put(ring, b % n, 0)
      end
    end
  end
else
  ring = string.rep(zero, n)
  total = 0
  oldest = nil
  if stored[1] and stored[4] then
    -- A re-tuned policy: the in-window total under the old shape carries into the current bucket.
    local old_width, old_n = string.match(stored[1], '^(%d+):(%d+)$')
    old_width = tonumber(old_width)
    old_n = tonumber(old_n)
    if old_width and old_n and #stored[4] == 4 * old_n then
      local old = {struct.unpack('<' .. string.rep('I4', old_n), stored[4])}
      local old_cur = math.floor(now / old_width)
      local head = tonumber(stored[2])
      local steps = math.min(math.max(old_cur - head, 0), old_n)
      for b = old_cur - steps + 1, old_cur do old[(b % old_n) + 1] = 0 end
      for i = 1, old_n do total = total + old[i] end
      ring = put(ring, cur % n, total)
      oldest = cur
    end
  end
end

if total == 0 then
  oldest = nil
elseif not oldest or oldest < cur - n + 1 or oldest > cur then
  -- The oldest count left the window (once per bucket at most): find the next one. Bucket
  -- cur - n + 1 lives at slot (cur + 1) % n; the window runs from there to the end of the ring,
  -- then from slot 0 to cur % n.
  local first = (cur + 1) % n
  local at = string.find(ring, '[^%z]', first * 4 + 1) or string.find(ring, '[^%z]')
  local slot = math.floor((at - 1) / 4)
  if slot >= first then
    oldest = cur - n + 1 + slot - first
  else
    oldest = cur + 1 + slot - first
  end
end

local allowed = 0
if counting and total < limit then
  allowed = 1
  total = total + 1
  ring = put(ring, cur % n, get(ring, cur % n) + 1)
  oldest = oldest or cur
end

local reset = 0
local retry = 0
if total > 0 then
  reset = (oldest + n) * width - now
end
if counting and allowed == 0 then
  if limit == 0 then
    retry = window
  else
    -- Until enough counts have left for the total to drop below the limit.
    local must = total - limit + 1
    local left = 0
    for b = cur - n + 1, cur do
      left = left + get(ring, b % n)
      if left >= must then
        retry = (b + n) * width - now
        break
      end
    end
  end
end
if total > 0 then
  if same_bucket and allowed == 1 then
    -- Another count in the bucket that set the TTL (a window and a bucket from its first
    -- write, which outlasts every count of the bucket): the shape and head stand too.
    redis.call('HSET', KEYS[1], 't', string.format('%d', total), 'o', string.format('%d', oldest),
               'c', ring)
  elseif allowed == 1 or ring ~= stored[4] or stored[1] ~= shape then
    redis.call('HSET', KEYS[1], 'g', shape, 'h', string.format('%d', cur), 't',
               string.format('%d', total), 'o', string.format('%d', oldest), 'c', ring)
    redis.call('PEXPIRE', KEYS[1], window + width)
  end
elseif stored[1] then
  redis.call('DEL', KEYS[1])
end
return {allowed, total, limit, reset, retry}
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
