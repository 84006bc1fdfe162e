--[[
  The vehicle events' commit (src/ingest/events/store/commit.ts: CommitArgs packs its arguments, laid out
  by one field list there, which this script's unpacking is tested against): a job's
  vehicle states, their pending and held records, what they derived, and what their corrections keep
  (checkpoints, the ledger of what was told), written together or not at all, and only if no other job
  changed those vehicles meanwhile.

  KEYS[1]  hash: vehicleno -> "<version> <committed part>" (the partition's states)
  KEYS[2]  stream: the partition's outbox
  KEYS[3]  sorted set: vehicles with records pending, by when they are next swept (less the idle time)
  KEYS[4]  sorted set: vehicles with a correction due, by when it is due
  KEYS[4 + (k - 1) * S + j]  sorted set: vehicle k's j-th record set (its streams' pending records by
           stream id, then its waiting streams' held records), by time
  KEYS[4 + n * S + m]  hash: the m-th late item's vehicle's corrections: `c<epoch>:<cut>` -> a checkpoint's
           committed part (raw-deflated), `t<epoch>` -> what was told in the epoch, a line an output
           (src/ingest/events/corrections/)

  ARGV[1]  every vehicle's plate and the version its state was read at: I4 count, then per vehicle
           I4 length + plate, I4 length + version ('' for none); all the check reads
  ARGV[2]  S, the number of record sets a vehicle has
  ARGV[3]  per vehicle: I4 length + committed part, d since (NaN: nothing to sweep), then per record set:
           d watermark (NaN: none; records at or below it are removed), I4 count + d times of records
           to replace, I4 count + (d time, I4 length + bytes) records to add;
           then I4 count + (I4 length + text) outbox entries;
           then I4 count + late items: d vehicle (from 0), d reset, d correctFrom (NaN: none),
           I4 count + (d epoch, d cut, I4 length + bytes) checkpoints, I4 count + (I4 length + field,
           I4 length + lines) ledger lines to append to a field.
           Counts and lengths are 4-byte big-endian, numbers 8-byte big-endian doubles (struct '>I4', '>d').
  ARGV[4]  wall ms at which a correction this commit puts in KEYS[4] is due
  ARGV[5]  EVENTS_HORIZON in ms: once a checkpoint is added, those older than the newest less this (but
           the newest of them) are dropped, with the ledger entries of their epochs

  Returns '' when written, else the plate of the first vehicle whose version moved on (nothing written).
  A script's cost in Redis is mostly its calls and the bytes made into Lua strings: hence one call a key
  where it can, and no byte read twice. Lua's unpack takes a few thousand values at most: long lists go
  in chunks.
]]
local h, s = ARGV[1], ARGV[3]
local streams = tonumber(ARGV[2])
local horizon = tonumber(ARGV[5])
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
    local records = KEYS[4 + (k - 1) * streams + j]
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

-- A checkpoint field's cut, as text: '-' before any record.
local function cutText(cut)
  if cut == -math.huge then return '-' end
  return string.format('%.17g', cut)
end
-- Drops the checkpoints the horizon has passed, but the newest of them, and what was told in their epochs.
local function prune(key, boundary)
  local fields = redis.call('HKEYS', key)
  local keepFrom = -1
  for _, f in ipairs(fields) do
    local e, c = string.match(f, '^c(%d+):(.*)$')
    if e then
      local cut = (c == '-') and -math.huge or tonumber(c)
      if cut <= boundary and tonumber(e) > keepFrom then keepFrom = tonumber(e) end
    end
  end
  if keepFrom <= 0 then return end
  local drop = {}
  for _, f in ipairs(fields) do
    local e = string.match(f, '^[ct](%d+)')
    if e and tonumber(e) < keepFrom then drop[#drop + 1] = f end
  end
  if #drop > 0 then chunked('HDEL', key, drop) end
end
local lates
lates, pos = struct.unpack('>I4', s, pos)
for m = 1, lates do
  local key = KEYS[4 + n * streams + m]
  local v, reset, from, cps, newest
  v, reset, from, cps, pos = struct.unpack('>dddI4', s, pos)
  if reset == 1 then redis.call('DEL', key) end
  if from == from then redis.call('ZADD', KEYS[4], 'NX', ARGV[4], plates[v + 1]) end
  for c = 1, cps do
    local epoch, cut, committed
    epoch, cut, committed, pos = struct.unpack('>ddI4c0', s, pos)
    redis.call('HSET', key, 'c' .. string.format('%d', epoch) .. ':' .. cutText(cut), committed)
    newest = cut
  end
  local told
  told, pos = struct.unpack('>I4', s, pos)
  for t = 1, told do
    local field, lines
    field, lines, pos = struct.unpack('>I4c0I4c0', s, pos)
    redis.call('HSET', key, field, (redis.call('HGET', key, field) or '') .. lines)
  end
  if newest ~= nil and newest > -math.huge then prune(key, newest - horizon) end
end
return ''
