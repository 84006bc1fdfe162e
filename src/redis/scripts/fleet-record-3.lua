--[[
  What jobs of a partition wrote, for the fleet (src/ingest/fleet/state.ts, FleetState.record): each
  vehicle's newest record time and position, and the record that ended its silence, in one round trip.

  KEYS[1]  sorted set: vehicleno -> newest record time (ms)
  KEYS[2]  hash: vehicleno -> "time,lat,lng" of the newest position
  KEYS[3]  hash: vehicleno -> time of the record that ended its latest silence ("resumed")
  ARGV[1]  the gap (ms) that makes a record a return from silence
  ARGV[2]  n, the number of vehicles; then per vehicle: its plate, its newest time, k, and k pairs
           (time of the batch's record before it or '-', time) of the records that may end a silence,
           in time order; then (plate, time, "lat,lng") per position.

  A vehicle's candidate ends a silence when it is newer than the vehicle's last-seen and more than the
  gap after both that and the batch's record before it; the newest that does is kept in KEYS[3]. A
  vehicle seen for the first time has no silence to end. ZADD GT keeps the newest time whatever order
  jobs are written in; a position is replaced only by a newer (or equally new) one. Returns n.
]]
local gap = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local j = 3
for _ = 1, n do
  local v, newest, k = ARGV[j], ARGV[j + 1], tonumber(ARGV[j + 2])
  j = j + 3
  local seen = redis.call('ZSCORE', KEYS[1], v)
  if seen then
    seen = tonumber(seen)
    local resumed
    for c = j, j + 2 * k - 1, 2 do
      local t = tonumber(ARGV[c + 1])
      local before = tonumber(ARGV[c])
      if before == nil or before < seen then before = seen end
      if t - before > gap then resumed = ARGV[c + 1] end
    end
    if resumed then redis.call('HSET', KEYS[3], v, resumed) end
  end
  j = j + 2 * k
  redis.call('ZADD', KEYS[1], 'GT', newest, v)
end
while j + 2 <= #ARGV do
  local cur = redis.call('HGET', KEYS[2], ARGV[j])
  if not cur or tonumber(string.match(cur, '^[^,]+')) <= tonumber(ARGV[j + 1]) then
    redis.call('HSET', KEYS[2], ARGV[j], ARGV[j + 1] .. ',' .. ARGV[j + 2])
  end
  j = j + 3
end
return n
