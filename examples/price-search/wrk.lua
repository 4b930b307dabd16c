-- wrk script for the price-search service: posts request bodies drawn at
-- random from the samples file the service writes (PRICE_SAMPLES, a Lua file
-- defining `bodies`) to the path given after `--`, and prints one RESULT line
-- the benchmark driver reads.
--   PRICE_SAMPLES=target/price-bench/samples/samples.lua \
--     wrk -t1 -c16 -d10s -s examples/price-search/wrk.lua http://127.0.0.1:8091 -- /v1/search/keel/prices

dofile(os.getenv("PRICE_SAMPLES"))

local path = "/v1/search/bitmap/prices"
local headers = { ["Content-Type"] = "application/json" }

function init(args)
  if args[1] ~= nil then
    path = args[1]
  end
end

function request()
  return wrk.format("POST", path, headers, bodies[math.random(#bodies)])
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d errors=%d non2xx=%d\n",
    summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.connect + e.read + e.write + e.timeout, e.status))
end
