--[[
  Removes one vehicle's state (src/ingest/fleet/expire.ts) if it was still not heard from since the
  cutoff: its last seen, position and return, its silences, its event derivation's state, pending and
  held records, checkpoints and ledger. All of it lives beside its partition's queue (one hash slot), so
  a record that arrives meanwhile either comes before (the vehicle is kept) or after (it starts afresh).

  KEYS[1]  sorted set: the partition's last seen (FleetKeys.seen)
  KEYS[2]  hash: positions (FleetKeys.positions)
  KEYS[3]  hash: returns (FleetKeys.resumed)
  KEYS[4]  hash: the partition's event states (RedisKeys.vehicleState)
  KEYS[5]  sorted set: vehicles pending derivation (RedisKeys.vehiclesPending)
  KEYS[6]  sorted set: vehicles with a correction due (RedisKeys.eventsCorrections)
  KEYS[7..]  the vehicle's own keys (its corrections hash, its record sets), deleted, then the partition's
             silent sets and their last-seen hashes, cleared of it
  ARGV[1]  the vehicle's plate
  ARGV[2]  the cutoff, ms: a vehicle seen at or after it is kept
  ARGV[3]  how many of KEYS[7..] are the vehicle's own keys (deleted); the rest are sets and hashes it is removed from

  Returns 1 when removed, 0 when kept (seen since, or not known).
]]
local plate = ARGV[1]
local seen = redis.call('ZSCORE', KEYS[1], plate)
if not seen or tonumber(seen) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[1], plate)
redis.call('HDEL', KEYS[2], plate)
redis.call('HDEL', KEYS[3], plate)
redis.call('HDEL', KEYS[4], plate)
redis.call('ZREM', KEYS[5], plate)
redis.call('ZREM', KEYS[6], plate)
local own = tonumber(ARGV[3])
for i = 7, #KEYS do
  if i < 7 + own then
    redis.call('DEL', KEYS[i])
  elseif redis.call('TYPE', KEYS[i]).ok == 'hash' then
    redis.call('HDEL', KEYS[i], plate)
  else
    redis.call('SREM', KEYS[i], plate)
  end
end
return 1
