--[[
  Pacing of the calls to the telematics service, shared by every process calling with one account
  (src/ingest/sync/pacer.ts, whose header says why turns go one at a time and count from answers). Kept
  on Redis's clock (TIME), so that processes on hosts whose clocks differ still keep calls apart.

  KEYS[1]  hash: `busy` the turn in flight (its id) and `until` when its lease ends; `a` the times the
           last calls were answered (ms on Redis's clock, space-separated, oldest first, at most
           max(ARGV[2], 1)); `hold` no call before this moment (a 429's Retry-After). It expires a minute
           after the last moment it holds.
  ARGV[1]  least ms between an answer and the next call (0: no such bound)
  ARGV[2]  most calls within ARGV[3] ms (0: no such bound)
  ARGV[3]  that window, ms
  ARGV[4]  what to do: `take` a turn, `release` one, or `hold`
  ARGV[5]  take: the turn's id (any unique string); release: the id taken; hold: ms from now before
           which nobody calls
  ARGV[6]  take: ms from now before which this turn may not start (its own Retry-After; 0: none);
  ARGV[7]  take: the lease, ms: a turn not released by its start and this long is taken as answered
           (its process died)

  Returns, for take: the ms from now at which the turn starts (0 or more: it is this caller's), or a
  negative number: another turn is in flight, ask again within that many ms. For release and hold: 0.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local gap, per, window = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local op = ARGV[4]
local hold = tonumber(redis.call('HGET', KEYS[1], 'hold')) or 0
local answers = {}
for m in string.gmatch(redis.call('HGET', KEYS[1], 'a') or '', '%S+') do answers[#answers + 1] = tonumber(m) end
local busy = redis.call('HGET', KEYS[1], 'busy')
local busyUntil = tonumber(redis.call('HGET', KEYS[1], 'until')) or 0

local function keep(last)
  redis.call('PEXPIRE', KEYS[1], math.ceil(math.max(last, hold, now) - now) + 60000)
end

if op == 'hold' then
  hold = math.max(hold, now + tonumber(ARGV[5]))
  redis.call('HSET', KEYS[1], 'hold', hold)
  keep(busyUntil)
  return 0
end

if op == 'release' then
  answers[#answers + 1] = now
  local from = math.max(1, #answers - math.max(per, 1) + 1)
  local kept = {}
  for i = from, #answers do kept[#kept + 1] = string.format('%.3f', answers[i]) end
  redis.call('HSET', KEYS[1], 'a', table.concat(kept, ' '))
  if busy == ARGV[5] then redis.call('HDEL', KEYS[1], 'busy', 'until') end
  keep(0)
  return 0
end

-- take
if busy and busy ~= ARGV[5] and busyUntil > now then return -math.max(1, math.ceil(busyUntil - now)) end
local at = math.max(now, hold, now + tonumber(ARGV[6]))
if gap > 0 and #answers > 0 then at = math.max(at, answers[#answers] + gap) end
if per > 0 and #answers >= per then at = math.max(at, answers[#answers - per + 1] + window) end
local untilMs = at + tonumber(ARGV[7])
redis.call('HSET', KEYS[1], 'busy', ARGV[5], 'until', untilMs)
keep(untilMs)
return math.ceil(at - now)
