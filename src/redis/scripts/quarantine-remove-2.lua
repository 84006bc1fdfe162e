--[[
  Removes quarantine entries (src/ingest/queue/quarantine.ts) and gives their bytes back to their
  sender's share, in one step, so a share never counts an entry that is gone, nor frees one twice
  when two operators replay the same entry at once.

  KEYS[1]  stream: the quarantine
  KEYS[2]  hash: bytes held per sender (field: the entry's `sender`), on the stream's slot
  ARGV     the entry ids to remove

  An entry without a `bytes` field (kept by a release before the shares) was never counted and frees
  nothing. Returns how many entries were removed.
]]
local removed = 0
for _, id in ipairs(ARGV) do
  local rows = redis.call('XRANGE', KEYS[1], id, id)
  local row = rows[1]
  if row then
    local sender, bytes = nil, nil
    local kv = row[2]
    for i = 1, #kv, 2 do
      if kv[i] == 'sender' then sender = kv[i + 1] elseif kv[i] == 'bytes' then bytes = tonumber(kv[i + 1]) end
    end
    removed = removed + redis.call('XDEL', KEYS[1], id)
    if sender and bytes then
      local left = redis.call('HINCRBY', KEYS[2], sender, -bytes)
      if left <= 0 then redis.call('HDEL', KEYS[2], sender) end
    end
  end
end
return removed
