-- SPDX-License-Identifier: Apache-2.0
-- wrk script for the `limits` section of tests/bench/peer_compare.sh: every request carries
-- `X-API-Key: user-N`, N spread over 0..KEYS-1, so a per-key limiter keeps KEYS keys live.
-- Every target of that section (plain sluice included) is driven by this same script, so the
-- client does the same work whichever proxy it measures.
--
-- Cost per request: one table index and one add. All KEYS complete requests (request line,
-- Host, X-API-Key) are formatted once per wrk thread in init(). The walk steps through the keys
-- with a stride that is coprime to KEYS: consecutive requests hit distant keys and every key
-- comes up once per KEYS requests. Each wrk thread starts at its own offset.
--
-- usage: wrk -s keys.lua URL [-- KEYS]   (KEYS defaults to 10000)

local KEYS = 10000
local STRIDE = 7919 -- a prime: coprime to any KEYS that it does not divide

local requests = {}
local index = 0
local thread_count = 0

-- setup runs once per wrk thread, in the main Lua state: number the threads.
function setup(thread)
  thread:set("thread_id", thread_count)
  thread_count = thread_count + 1
end

-- init runs in each thread's own Lua state, with the arguments after `--`.
function init(args)
  KEYS = tonumber(args[1]) or KEYS
  assert(KEYS >= 1, "KEYS must be at least 1")
  if KEYS % STRIDE == 0 then
    STRIDE = 1
  end
  for n = 0, KEYS - 1 do
    local headers = {}
    for name, value in pairs(wrk.headers) do -- Host (set by wrk) and any -H headers
      headers[name] = value
    end
    headers["X-API-Key"] = "user-" .. n
    requests[n] = wrk.format(nil, nil, headers)
  end
  index = ((tonumber(thread_id) or 0) * 2503) % KEYS
end

function request()
  index = index + STRIDE
  if index >= KEYS then
    index = index % KEYS
  end
  return requests[index]
end
