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
local format = '<' .. string.rep('I4', n)

-- Advances a ring of n counters whose newest bucket is `head` to bucket `to`: the slots of the
-- buckets in between held counts of an earlier lap and are cleared.
local function advance(counts, ring_n, head, to)
  local steps = math.min(to - head, ring_n)
  for b = to - steps + 1, to do
    counts[(b % ring_n) + 1] = 0
  end
end

local stored = redis.call('HMGET', KEYS[1], 'g', 'h', 'c')
local counts
if stored[1] and stored[1] == shape then
  counts = {struct.unpack(format, stored[3])}
  counts[n + 1] = nil  -- struct.unpack also returns the next position
  local head = tonumber(stored[2])
  if cur > head then advance(counts, n, head, cur) end
else
  counts = {}
  for i = 1, n do counts[i] = 0 end
end
if stored[1] and stored[1] ~= shape then
  -- A re-tuned policy: the in-window total under the old shape carries into the current bucket.
  local old_width, old_n = string.match(stored[1], '^(%d+):(%d+)$')
  old_width = tonumber(old_width)
  old_n = tonumber(old_n)
  local old = {struct.unpack('<' .. string.rep('I4', old_n), stored[3])}
  local old_cur = math.floor(now / old_width)
  local head = tonumber(stored[2])
  if old_cur > head then advance(old, old_n, head, old_cur) end
  local carried = 0
  for i = 1, old_n do carried = carried + old[i] end
  counts[(cur % n) + 1] = carried
end

local total = 0
for i = 1, n do total = total + counts[i] end
local allowed = 0
if counting and total < limit then
  allowed = 1
  total = total + 1
  counts[(cur % n) + 1] = counts[(cur % n) + 1] + 1
end
local reset = 0
local retry = 0
if total > 0 then
  for b = cur - n + 1, cur do  -- the oldest bucket that holds a count
    if counts[(b % n) + 1] > 0 then
      reset = (b + n) * width - now
      break
    end
  end
end
if counting and allowed == 0 then
  if limit == 0 then
    retry = window
  else
    -- Until enough counts have left for the total to drop below the limit.
    local must = total - limit + 1
    local left = 0
    for b = cur - n + 1, cur do
      left = left + counts[(b % n) + 1]
      if left >= must then
        retry = (b + n) * width - now
        break
      end
    end
  end
end
if total > 0 then
  redis.call('HSET', KEYS[1], 'g', shape, 'h', string.format('%d', cur), 'c',
             struct.pack(format, unpack(counts)))
  redis.call('PEXPIRE', KEYS[1], window + width)
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
