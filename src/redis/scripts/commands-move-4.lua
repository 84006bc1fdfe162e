--[[
  Moves a command from one state to the next (src/ingest/commands/ledger.ts, move): the ledger's one
  write of a state, and the lock that lets one worker only send a command (only one move out of
  "waiting" into "sending" succeeds, whoever else tries).

  KEYS[1]  hash: command id -> the command's JSON (CommandKeys.entries)
  KEYS[2]  hash: vehicleno -> the id of its command in flight (CommandKeys.live)
  KEYS[3]  hash: vehicleno -> its immobilisations, JSON {id, type, since, past}: the one it is under (id,
           type, since; absent when none) and its last ended ones, oldest first (past: [{id, type, from,
           to}], absent when none) (CommandKeys.immobilised)
  KEYS[4]  stream of state changes to tell (CommandKeys.changes): {id, state, at} each
  ARGV[1]  the command's id
  ARGV[2]  the states it may be in, "," between (else nothing changes)
  ARGV[3]  the state it moves to
  ARGV[4]  now, ms
  ARGV[5]  a note on the move, or ""
  ARGV[6]  JSON object of fields to set on the command (sentAt, answer, confirmBy), or "{}"
  ARGV[7]  what the move does to the vehicle's immobilisation: "set" (an immobilise of a stopping type
           confirmed: under it from now; one it was under ends now), "clear" (a mobilise of a stopping type
           about to be sent: the one it is under ends now), or ""
  ARGV[8]  whether the state it moves to is final ("1": the vehicle's place in flight is freed)
  ARGV[9]  the most changes the stream keeps untold (MAXLEN ~)
  ARGV[10] the most ended immobilisations kept a vehicle (the oldest beyond go)

  Returns the command's JSON after the move, or false when it was in none of ARGV[2]'s states (another
  worker moved it first, or it was replaced).
]]
local json = redis.call('HGET', KEYS[1], ARGV[1])
if not json then return false end
local e = cjson.decode(json)
local allowed = false
for s in string.gmatch(ARGV[2], '[^,]+') do
  if s == e.state then allowed = true end
end
if not allowed then return false end
local now = tonumber(ARGV[4])
e.state = ARGV[3]
local step = {state = ARGV[3], at = now}
if ARGV[5] ~= '' then step.note = ARGV[5] end
table.insert(e.history, step)
for k, v in pairs(cjson.decode(ARGV[6])) do e[k] = v end
local out = cjson.encode(e)
redis.call('HSET', KEYS[1], ARGV[1], out)
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[9], '*', 'id', ARGV[1], 'state', ARGV[3], 'at', ARGV[4])
if ARGV[8] == '1' and redis.call('HGET', KEYS[2], e.vehicleno) == ARGV[1] then redis.call('HDEL', KEYS[2], e.vehicleno) end
if ARGV[7] ~= '' then
  local held = redis.call('HGET', KEYS[3], e.vehicleno)
  local im = held and cjson.decode(held) or {}
  local past = {}
  if type(im.past) == 'table' then past = im.past end
  -- The one it is under ends now (lifted, or replaced by the one confirmed now).
  if im.id then table.insert(past, {id = im.id, type = im.type, from = im.since, to = now}) end
  while #past > tonumber(ARGV[10]) do table.remove(past, 1) end
  local kept = {}
  if #past > 0 then kept.past = past end
  if ARGV[7] == 'set' then
    kept.id = e.id
    kept.type = e.type
    kept.since = now
  end
  if next(kept) == nil then
    redis.call('HDEL', KEYS[3], e.vehicleno)
  else
    redis.call('HSET', KEYS[3], e.vehicleno, cjson.encode(kept))
  end
end
return out
