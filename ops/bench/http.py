"""HTTP scoring service benchmark: wrk (a second process) at fixed request rates.

    python ops/bench/http.py [--rates 25,50,100,200,0] [--duration 10] [--connections 8]
                             [--events-per-request 1] [--model DIR] [--memory]

Starts ``tollgate serve`` in a subprocess (the real pipeline; context in Redis under a
throw-away key prefix unless ``--memory``), waits for /readyz, then drives it with
``wrk`` and a Lua script that POSTs a fresh event (unique id, random customer,
terminal and amount) per request. For each target rate the script paces every
connection with wrk's ``delay()`` (rate 0 = as fast as possible, closed loop) and
prints the achieved throughput and p50/p95/p99 latency side by side.

wrk measures from the moment a request is sent; at a rate the server cannot keep up
with, the queue shows up as a shortfall in achieved rate rather than in latency
(closed-loop coordinated omission) — read the two columns together.

Without a trained model (``--model`` or the registry's), a freshly initialised one of
the serving architecture is used: speed does not depend on the weights.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOLLGATE = str(Path(sys.executable).parent / "tollgate")

LUA = r"""
local counter = 0
local thread_id = 0
local per_request = tonumber(os.getenv("TG_EVENTS_PER_REQUEST") or "1")
local delay_ms = tonumber(os.getenv("TG_DELAY_MS") or "0")
local token = os.getenv("TG_TOKEN")
local threads = {}

function setup(thread)
  thread:set("thread_id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(thread_id * 7919 + os.time())
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  if token and token ~= "" then wrk.headers["Authorization"] = "Bearer " .. token end
end

local base_time = 1722470400000

local function event()
  counter = counter + 1
  local c = math.random(1, 5000)
  return string.format(
    '{"event_id":"b%d-%d-%d","event_time_ms":%d,"customer_id":"C%d","account_id":"A%d",' ..
    '"terminal_id":"T%d","merchant_category":"5411","amount":%.2f,"currency":"EUR",' ..
    '"channel":"ecommerce","country":"BE"%s}',
    thread_id, os.time(), counter, base_time + counter * 37 + thread_id, c, c,
    math.random(1, 10000), math.random() * 200, (counter % 5 == 0) and ',"memo":"invoice 4411"' or "")
end

function request()
  if per_request == 1 then
    return wrk.format(nil, "/v1/decide", nil, event())
  end
  local parts = {}
  for i = 1, per_request do parts[i] = event() end
  return wrk.format(nil, "/v1/decide", nil, "[" .. table.concat(parts, ",") .. "]")
end

function delay()
  return delay_ms
end

function done(summary, latency, requests)
  local out = string.format(
    '{"requests":%d,"duration_us":%d,"errors_status":%d,"errors_connect":%d,"errors_timeout":%d,' ..
    '"p50_us":%d,"p95_us":%d,"p99_us":%d,"max_us":%d}',
    summary.requests, summary.duration, summary.errors.status, summary.errors.connect,
    summary.errors.timeout, latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max)
  io.stderr:write("TG_RESULT " .. out .. "\n")
end
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fresh_model_dir(root: Path) -> Path:
    from engine.encode import FieldIsolatedEncoder
    from engine.model import InputSpec, fresh_model, save_model_dir

    model, card = fresh_model(InputSpec.from_schema(FieldIsolatedEncoder().schema), version="bench-untrained")
    return save_model_dir(model, card, root / "bench-untrained")


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"tollgate serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("tollgate serve did not become ready")


def run_wrk(url: str, lua: Path, rate: float, duration: int, connections: int, events_per_request: int) -> dict:
    delay_ms = 0 if rate <= 0 else int(round(connections * 1000.0 / rate))
    env = dict(os.environ, TG_DELAY_MS=str(delay_ms), TG_EVENTS_PER_REQUEST=str(events_per_request))
    proc = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--timeout", "5s", "-s", str(lua), url],
                          env=env, capture_output=True, text=True, timeout=duration + 60)
    line = next((x for x in proc.stderr.splitlines() if x.startswith("TG_RESULT ")), None)
    if line is None:
        raise SystemExit(f"wrk failed:\n{proc.stdout}\n{proc.stderr}")
    r = json.loads(line.removeprefix("TG_RESULT "))
    seconds = r["duration_us"] / 1e6
    return {"target_rps": rate, "achieved_rps": r["requests"] / seconds,
            "events_per_s": r["requests"] * events_per_request / seconds,
            "p50_ms": r["p50_us"] / 1000, "p95_ms": r["p95_us"] / 1000, "p99_ms": r["p99_us"] / 1000,
            "errors": r["errors_status"] + r["errors_connect"] + r["errors_timeout"], "requests": r["requests"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="25,50,100,200,0", help="target requests/s, comma separated; 0 = max")
    ap.add_argument("--duration", type=int, default=10, help="seconds per rate")
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--events-per-request", type=int, default=1)
    ap.add_argument("--model", default=None, help="model directory (default: registry's, else an untrained one)")
    ap.add_argument("--memory", action="store_true", help="in-process context instead of Redis")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install wrk)")

    work = Path(tempfile.mkdtemp(prefix="tollgate-bench-http-"))
    lua = work / "post.lua"
    lua.write_text(LUA)
    model = args.model
    if model is None:
        from engine.assemble import ModelNotFound, find_model_dir
        from engine.settings import Settings

        try:
            model = str(find_model_dir(Settings()))
        except ModelNotFound:
            model = str(fresh_model_dir(work))
    port, prefix = free_port(), f"bench-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, TOLLGATE_REDIS__KEY_PREFIX=prefix, OMP_NUM_THREADS="2")
    cmd = [TOLLGATE, "serve", "--port", str(port), "--model", model, "--log-level", "warning"]
    if args.memory:
        cmd.append("--memory")
    server = subprocess.Popen(cmd, env=env, cwd=str(REPO))
    url = f"http://127.0.0.1:{port}"
    results = []
    try:
        wait_ready(url, server)
        run_wrk(url, lua, 0, 2, args.connections, args.events_per_request)  # warm caches and the allocator
        for rate in [float(x) for x in args.rates.split(",")]:
            results.append(run_wrk(url, lua, rate, args.duration, args.connections, args.events_per_request))
            r = results[-1]
            print(f"  rate {'max' if rate <= 0 else f'{rate:g}/s'}: {r['achieved_rps']:.1f} req/s, "
                  f"p99 {r['p99_ms']:.1f} ms", file=sys.stderr)
    finally:
        server.terminate()
        server.wait(30)
        if not args.memory:
            import redis

            from engine.settings import Settings

            client = redis.Redis.from_url(Settings().redis.url)
            for key in client.scan_iter(f"{prefix}:*"):
                client.delete(key)
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nHTTP /v1/decide — {args.connections} connections, {args.events_per_request} event(s)/request, "
          f"{args.duration} s per rate, context {'memory' if args.memory else 'redis'}, model {Path(model).name}")
    print(f"{'target req/s':>12} {'achieved':>9} {'events/s':>9} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}")
    for r in results:
        target = "max" if r["target_rps"] <= 0 else f"{r['target_rps']:g}"
        print(f"{target:>12} {r['achieved_rps']:9.1f} {r['events_per_s']:9.1f} {r['p50_ms']:8.2f} "
              f"{r['p95_ms']:8.2f} {r['p99_ms']:8.2f} {r['errors']:7d}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
