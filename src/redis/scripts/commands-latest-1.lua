--[[
  Merges what a batch of written records says into each vehicle's latest values (src/ingest/commands/latest.ts):
  each field's newest value by record time, and the newest times the vehicle was seen active, charging and
  discharging. Records come in any order; an older value never replaces a newer one.

  KEYS[1]  hash: vehicleno -> its latest values, JSON {f = {field = [time, value]}, a = [time, lat, lng, speed,
           ignition], ch = time, dis = time} (FleetKeys.latest)
  ARGV[1]  how many vehicles follow
  ARGV     then per vehicle: its plate, and JSON of the same shape with the batch's newest of each

  Returns the number of vehicles updated.
]]
local n = tonumber(ARGV[1])
local i = 2
for _ = 1, n do
  local plate = ARGV[i]
  local add = cjson.decode(ARGV[i + 1])
  i = i + 2
  local had = redis.call('HGET', KEYS[1], plate)
  local cur = had and cjson.decode(had) or {f = {}}
  if cur.f == nil then cur.f = {} end
  if add.f then
    for name, tv in pairs(add.f) do
      local old = cur.f[name]
      if not old or tv[1] >= old[1] then cur.f[name] = tv end
    end
  end
  if add.a and (not cur.a or add.a[1] >= cur.a[1]) then cur.a = add.a end
  if add.ch and (not cur.ch or add.ch > cur.ch) then cur.ch = add.ch end
  if add.dis and (not cur.dis or add.dis > cur.dis) then cur.dis = add.dis end
  redis.call('HSET', KEYS[1], plate, cjson.encode(cur))
end
return n
