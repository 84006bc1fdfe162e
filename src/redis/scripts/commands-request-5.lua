--[[
  Records a new command in the ledger (src/ingest/commands/ledger.ts, request): at most one command in
  flight per vehicle, and one command per idempotency key.

  KEYS[1]  hash: command id -> the command's JSON (CommandKeys.entries)
  KEYS[2]  hash: vehicleno -> the id of its command in flight (CommandKeys.live)
  KEYS[3]  hash: idempotency key -> "<request digest>\n<command id>" (CommandKeys.idempotency)
  KEYS[4]  sorted set: command id by the time it was asked (CommandKeys.order)
  KEYS[5]  stream of state changes to tell (CommandKeys.changes): {id, state, at} each
  ARGV[1]  the new command's JSON (state "requested")
  ARGV[2]  its id
  ARGV[3]  its vehicle
  ARGV[4]  its idempotency key, or "" for none
  ARGV[5]  the digest of what was asked (the same key with another digest is a conflict)
  ARGV[6]  now, ms
  ARGV[7]  the most commands kept (the oldest ended ones beyond it are removed, with their keys)
  ARGV[8]  the most changes the stream keeps untold (MAXLEN ~)

  Returns {outcome, id, replaced command's JSON or ""}: outcome "created"; "same" (the key's command,
  id its id: nothing new); "conflict" (the key was used for another request, id the command it made);
  "busy" (the vehicle's command in flight is being sent right now, id it: retry once it is sent).
  A command in flight is replaced: cancelled, with "replaced by <id>", and `replaces` set on the new one.
]]
local key = ARGV[4]
if key ~= '' then
  local had = redis.call('HGET', KEYS[3], key)
  if had then
    local nl = string.find(had, '\n', 1, true)
    local digest = string.sub(had, 1, nl - 1)
    local id = string.sub(had, nl + 1)
    if redis.call('HEXISTS', KEYS[1], id) == 1 then
      if digest == ARGV[5] then return {'same', id, ''} end
      return {'conflict', id, ''}
    end
  end
end
local now = tonumber(ARGV[6])
local entry = cjson.decode(ARGV[1])
local replaced = ''
local oldId = redis.call('HGET', KEYS[2], ARGV[3])
if oldId then
  local oldJson = redis.call('HGET', KEYS[1], oldId)
  if oldJson then
    local old = cjson.decode(oldJson)
    if old.state == 'sending' then return {'busy', oldId, ''} end
    if old.state == 'requested' or old.state == 'waiting' or old.state == 'sent' then
      local note = 'replaced by ' .. ARGV[2]
      if old.state == 'sent' then note = note .. ' after it was sent: it may have been carried out' end
      old.state = 'cancelled'
      old.replacedBy = ARGV[2]
      table.insert(old.history, {state = 'cancelled', at = now, note = note})
      replaced = cjson.encode(old)
      redis.call('HSET', KEYS[1], oldId, replaced)
      redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[8], '*', 'id', oldId, 'state', 'cancelled', 'at', ARGV[6])
      entry.replaces = oldId
    end
  end
end
local json = cjson.encode(entry)
redis.call('HSET', KEYS[1], ARGV[2], json)
redis.call('HSET', KEYS[2], ARGV[3], ARGV[2])
redis.call('ZADD', KEYS[4], now, ARGV[2])
redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[8], '*', 'id', ARGV[2], 'state', 'requested', 'at', ARGV[6])
if key ~= '' then redis.call('HSET', KEYS[3], key, ARGV[5] .. '\n' .. ARGV[2]) end
-- Bounded: the oldest commands beyond the bound go, each only once it has ended (one in flight stays).
local keep = tonumber(ARGV[7])
local over = redis.call('ZCARD', KEYS[4]) - keep
if over > 0 then
  local oldest = redis.call('ZRANGE', KEYS[4], 0, over + 99)
  local removed = 0
  for _, id in ipairs(oldest) do
    if removed >= over then break end
    local j = redis.call('HGET', KEYS[1], id)
    local e = j and cjson.decode(j)
    if not e or e.state == 'confirmed' or e.state == 'not_confirmed' or e.state == 'failed' or e.state == 'expired' or e.state == 'cancelled' then
      redis.call('HDEL', KEYS[1], id)
      redis.call('ZREM', KEYS[4], id)
      if e and e.idempotencyKey then redis.call('HDEL', KEYS[3], e.idempotencyKey) end
      removed = removed + 1
    end
  end
end
return {'created', ARGV[2], replaced}
