--[[
  The vehicle events' commit (src/ingest/events/store.ts, CommitArgs packs its arguments, laid out by one
  field list, src/formats/commit.ts, which this script's unpacking is tested against): a job's
  vehicle states, their pending records and what they derived, written together or not at all, and only
  if no other job changed those vehicles meanwhile.

  KEYS[1]  hash: vehicleno -> "<version> <committed part>" (the partition's states)
  KEYS[2]  stream: the partition's outbox
  KEYS[3]  sorted set: vehicles with records pending, by the wall time since which one of their streams is idle
  KEYS[3 + (k - 1) * S + j]  sorted set: vehicle k's pending records of its j-th stream (stream id order), by time

  ARGV[1]  every vehicle's plate and the version its state was read at: I4 count, then per vehicle
           I4 length + plate, I4 length + version ('' for none); all the check reads
  ARGV[2]  S, the number of streams a vehicle has
  ARGV[3]  per vehicle: I4 length + committed part, d since (NaN: no pending records), then per stream:
           d watermark (NaN: none; pending records at or below it are removed), I4 count + d times of
           records to replace, I4 count + (d time, I4 length + bytes) records to add;
           then I4 count + (I4 length + text) outbox entries.
           Counts and lengths are 4-byte big-endian, numbers 8-byte big-endian doubles (struct '>I4', '>d').

  Returns '' when written, else the plate of the first vehicle whose version moved on (nothing written).
  A script's cost in Redis is mostly its calls and the bytes made into Lua strings: hence one call a key
  where it can, and no byte read twice. Lua's unpack takes a few thousand values at most: long lists go
  in chunks.
]]
local h, s = ARGV[1], ARGV[3]
local streams = tonumber(ARGV[2])
local n, pos = struct.unpack('>I4', h, 1)
local function chunked(cmd, key, list)
  for i = 1, #list, 2000 do redis.call(cmd, key, unpack(list, i, math.min(i + 1999, #list))) end
end
local plates, versions = {}, {}
for k = 1, n do plates[k], versions[k], pos = struct.unpack('>I4c0I4c0', h, pos) end
pos = 1
for i = 1, n, 2000 do
  local cur = redis.call('HMGET', KEYS[1], unpack(plates, i, math.min(i + 1999, n)))
  for j = 1, #cur do
    local c = cur[j]
    if (c and string.match(c, '^(%d+) ') or '') ~= versions[i + j - 1] then return plates[i + j - 1] end
  end
end
local states, arrivals, idle = {}, {}, {}
for k = 1, n do
  local v, committed, since = plates[k]
  committed, since, pos = struct.unpack('>I4c0d', s, pos)
  states[2 * k - 1] = v
  states[2 * k] = committed
  if since ~= since then idle[#idle + 1] = v else arrivals[#arrivals + 1] = since; arrivals[#arrivals + 1] = v end
  for j = 1, streams do
    local records = KEYS[3 + (k - 1) * streams + j]
    local wm, replaces, adds
    wm, replaces, pos = struct.unpack('>dI4', s, pos)
    if wm == wm then redis.call('ZREMRANGEBYSCORE', records, '-inf', wm) end
    for r = 1, replaces do
      local t
      t, pos = struct.unpack('>d', s, pos)
      redis.call('ZREMRANGEBYSCORE', records, t, t)
    end
    adds, pos = struct.unpack('>I4', s, pos)
    if adds > 0 then
      local za = {}
      for a = 1, adds do za[2 * a - 1], za[2 * a], pos = struct.unpack('>dI4c0', s, pos) end
      chunked('ZADD', records, za)
    end
  end
end
chunked('HSET', KEYS[1], states)
chunked('ZADD', KEYS[3], arrivals)
chunked('ZREM', KEYS[3], idle)
local entries
entries, pos = struct.unpack('>I4', s, pos)
for j = 1, entries do
  local e
  e, pos = struct.unpack('>I4c0', s, pos)
  redis.call('XADD', KEYS[2], '*', 'e', e)
end
return ''
