--[[
  When each vehicle came back from its silence (src/ingest/fleet/state.ts, backAt).

  KEYS[1]  sorted set: vehicleno -> newest record time (ms)
  KEYS[2]  hash: vehicleno -> time of the record that ended its latest silence ("resumed")
  ARGV     plates

  Returns, per plate, its resumed time, or, when no record ended its silence by more than the gap
  (records delivered late rather than a vehicle silent), its last-seen, kept as its resumed time so that
  a run done again tells the same; false for a vehicle gone from KEYS[1].
]]
local out = {}
for i = 1, #ARGV do
  local seen = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if seen then
    local r = redis.call('HGET', KEYS[2], ARGV[i])
    if not r then
      redis.call('HSET', KEYS[2], ARGV[i], seen)
      r = seen
    end
    out[i] = r
  else
    out[i] = false
  end
end
return out
