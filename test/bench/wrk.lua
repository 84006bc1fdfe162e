-- wrk as the bench's load client (test/bench/wrk.ts): each request sends the next body of a file
-- written by the load generator, one JSON push a line, so every record is new and none repeats.
-- args: <bodies file> <Authorization header>
sent = 0
local bodies = {}
local i = 0

function init(args)
  for line in io.lines(args[1]) do bodies[#bodies + 1] = line end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  if args[2] ~= nil and args[2] ~= "" then wrk.headers["Authorization"] = args[2] end
end

function request()
  i = i + 1
  sent = sent + 1
  -- Past the file's end the bodies would repeat: the orchestrator sees sent > bodies and refuses the round.
  return wrk.format(nil, nil, nil, bodies[((i - 1) % #bodies) + 1])
end

local threads = {}
function setup(thread) threads[#threads + 1] = thread end

function done(summary, latency, requests)
  local s = 0
  for _, t in ipairs(threads) do s = s + t:get("sent") end
  io.write(string.format(
    'WRK_RESULT {"requests":%d,"non2xx":%d,"sent":%d,"durationUs":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"p50Us":%d,"p99Us":%d}\n',
    summary.requests, summary.errors.status, s, summary.duration, summary.errors.connect, summary.errors.read,
    summary.errors.write, summary.errors.timeout, latency:percentile(50), latency:percentile(99)))
end
