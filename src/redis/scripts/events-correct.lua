--[[
  A vehicle's correction (src/ingest/events/store/: `correctionCall` in commit.ts; corrections/): its
  replayed state, its pending and held records whole, its corrections hash's changed fields, and what the
  correction tells, written together or not at all, and only if no job changed the vehicle since its
  state was read (else the correction runs again on the fresh state).

  KEYS[1]  hash: vehicleno -> "<version> <committed part>" (the partition's states)
  KEYS[2]  stream: the partition's outbox
  KEYS[3]  sorted set: vehicles with records pending, by when they are next swept (less the idle time)
  KEYS[4]  sorted set: vehicles with a correction due, by when it is due
  KEYS[5]  hash: the vehicle's corrections (checkpoints `c<epoch>:<cut>`, ledger `t<epoch>:<id>`)
  KEYS[5 + j]  sorted set: the vehicle's j-th record set (its streams' pending records by stream id,
           then its waiting streams' held records), by time

  ARGV[1]  the plate
  ARGV[2]  the version its state was read at ('' for none)
  ARGV[3]  "<version + 1> <committed part>": the replayed state
  ARGV[4]  when it is next swept, less the idle time, as decimal text ('' for never: removed from KEYS[3])
  ARGV[5]  when a correction still due is due ('' for none: removed from KEYS[4])
  ARGV[6]  S, the number of record sets; then per set: its count, then that many score, member pairs
           (the set is replaced whole); then a count and that many fields of KEYS[5] to drop; then a
           count and that many field, value pairs of KEYS[5] to write; then a count and that many
           outbox entries (JSON)

  Returns '' when written, else the plate (its version moved on; nothing written).
]]
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if (cur and string.match(cur, '^(%d+) ') or '') ~= ARGV[2] then return ARGV[1] end
local function chunked(cmd, key, list)
  for i = 1, #list, 2000 do redis.call(cmd, key, unpack(list, i, math.min(i + 1999, #list))) end
end
-- ARGV[from..to] as a list (copied one by one: unpack takes a few thousand values at most).
local function args(from, to)
  local list = {}
  for i = from, to do list[#list + 1] = ARGV[i] end
  return list
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
if ARGV[4] == '' then redis.call('ZREM', KEYS[3], ARGV[1]) else redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1]) end
if ARGV[5] == '' then redis.call('ZREM', KEYS[4], ARGV[1]) else redis.call('ZADD', KEYS[4], ARGV[5], ARGV[1]) end
local sets = tonumber(ARGV[6])
local a = 7
for j = 1, sets do
  local n = tonumber(ARGV[a])
  redis.call('DEL', KEYS[5 + j])
  if n > 0 then chunked('ZADD', KEYS[5 + j], args(a + 1, a + 2 * n)) end
  a = a + 1 + 2 * n
end
local drop = tonumber(ARGV[a])
if drop > 0 then chunked('HDEL', KEYS[5], args(a + 1, a + drop)) end
a = a + 1 + drop
local write = tonumber(ARGV[a])
if write > 0 then chunked('HSET', KEYS[5], args(a + 1, a + 2 * write)) end
a = a + 1 + 2 * write
local entries = tonumber(ARGV[a])
for e = 1, entries do redis.call('XADD', KEYS[2], '*', 'e', ARGV[a + e]) end
return ''
