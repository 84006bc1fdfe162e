--[[
  The status job remembers vehicles gone silent for a threshold (src/ingest/fleet/state.ts, wentSilent).

  KEYS[1]  set: the vehicles last written to InfluxDB as silent for this threshold
  KEYS[2]  hash: vehicleno -> time of the record that ended its latest silence ("resumed")
  ARGV     (plate, last-seen) pairs

  A resumed time not after the last-seen a vehicle went silent with ended an earlier silence: it is
  dropped, so that only the return from this silence can be told. One after it was recorded since the
  run read the vehicle silent: it is this silence's end, and is kept. Returns the number of vehicles.
]]
for i = 1, #ARGV, 2 do
  local r = redis.call('HGET', KEYS[2], ARGV[i])
  if r and tonumber(r) <= tonumber(ARGV[i + 1]) then redis.call('HDEL', KEYS[2], ARGV[i]) end
  redis.call('SADD', KEYS[1], ARGV[i])
end
return #ARGV / 2
