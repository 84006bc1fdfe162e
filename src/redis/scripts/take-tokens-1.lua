--[[
  Per-sender rate limits (src/ingest/receive/rateLimit.ts): two token buckets in one hash, checked and
  taken together, so receiver replicas never overdraw a bucket between them. Each holds two seconds of
  its rate and refills continuously.

  KEYS[1]  hash: the sender's buckets (t0, at0: pushes; t1, at1: records), expiring after a minute unused
  ARGV[1]  now, ms
  ARGV[2], ARGV[3]  the pushes' rate a second (0: no limit) and this push's cost (1)
  ARGV[4], ARGV[5]  the records' rate a second (0: no limit) and this push's records

  Returns 0 when taken, -1 when the push is larger than a bucket can ever hold, else the ms to wait.
]]
local now = tonumber(ARGV[1])
local wait = 0
local fill = {}
for i = 0, 1 do
  local rate, cost = tonumber(ARGV[2 + i * 2]), tonumber(ARGV[3 + i * 2])
  if rate > 0 then
    local cap = rate * 2
    if cost > cap then return -1 end
    local tokens = tonumber(redis.call('HGET', KEYS[1], 't' .. i)) or cap
    local at = tonumber(redis.call('HGET', KEYS[1], 'at' .. i)) or now
    tokens = math.min(cap, tokens + math.max(0, now - at) / 1000 * rate)
    if tokens < cost then wait = math.max(wait, math.ceil((cost - tokens) / rate * 1000)) end
    fill[i] = tokens - cost
  end
end
if wait > 0 then return wait end
for i, v in pairs(fill) do redis.call('HSET', KEYS[1], 't' .. i, v, 'at' .. i, now) end
redis.call('PEXPIRE', KEYS[1], 60000)
return 0
