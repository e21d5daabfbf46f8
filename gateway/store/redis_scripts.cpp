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
local fields = redis.call('HGETALL', KEYS[1])
local stored = nil
local buckets = {}
for i = 1, #fields, 2 do
  if fields[i] == 'g' then
    stored = fields[i + 1]
  else
    buckets[tonumber(fields[i])] = tonumber(fields[i + 1])
  end
end
if stored ~= nil and stored ~= shape then
  local old_width, old_n = string.match(stored, '^(%d+):(%d+)$')
  local old_cur = math.floor(now / tonumber(old_width))
  local carried = 0
  for b, c in pairs(buckets) do
    if b > old_cur - tonumber(old_n) then carried = carried + c end
  end
  redis.call('DEL', KEYS[1])
  buckets = {}
  if carried > 0 then
    buckets[cur] = carried
    redis.call('HSET', KEYS[1], string.format('%d', cur), carried)
  end
end
local total = 0
local live = {}
for b, c in pairs(buckets) do
  if b <= cur - n then
    redis.call('HDEL', KEYS[1], string.format('%d', b))
  else
    total = total + c
    table.insert(live, b)
  end
end
local allowed = 0
local retry = 0
if total < limit then
  if counting then
    allowed = 1
    total = total + 1
    redis.call('HINCRBY', KEYS[1], string.format('%d', cur), 1)
    if buckets[cur] == nil or buckets[cur] == 0 then
      table.insert(live, cur)
    end
    buckets[cur] = (buckets[cur] or 0) + 1
  end
end
table.sort(live)
if counting and allowed == 0 then
  if limit == 0 then
    retry = window
  else
    local must = total - limit + 1
    local left = 0
    for _, b in ipairs(live) do
      left = left + buckets[b]
      if left >= must then
        retry = (b + n) * width - now
        break
      end
    end
  end
end
local reset = 0
if total > 0 then
  reset = (live[1] + n) * width - now
  redis.call('HSET', KEYS[1], 'g', shape)
  redis.call('PEXPIRE', KEYS[1], window + width)
else
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
  static const RedisScript kScript{kSlidingWindow, sha1_hex(kSlidingWindow)};
  return kScript;
}

const RedisScript& heartbeat_script() {
  static const RedisScript kScript{kHeartbeat, sha1_hex(kHeartbeat)};
  return kScript;
}

}  // namespace sluice::store
