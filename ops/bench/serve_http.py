"""HTTP scoring service benchmark: wrk (a second process) at fixed request rates.

    python ops/bench/serve_http.py [--rates 25,50,100,200,0] [--duration 10] [--connections 8]
                             [--events-per-request 1] [--model DIR] [--memory]

Starts ``tollgate serve`` in a subprocess (the real pipeline; context in Redis under a
throw-away key prefix unless ``--memory``), waits for /readyz, then, from a second
process, drives it at each target rate and prints achieved throughput and
p50/p95/p99 latency side by side:

* **fixed rates** — an open-loop generator (this file with ``--loadgen``, asyncio +
  httpx in its own process) sends request *i* at ``t0 + i / rate`` whether or not
  earlier ones have returned, and measures latency from that scheduled time, so a
  server that falls behind shows it in the latency (no coordinated omission);
* **rate 0 = max** — ``wrk`` with a Lua script, closed loop on ``--connections``
  connections: the throughput ceiling.

Every request POSTs fresh events (unique ids, random customer, terminal, amount).

Without a trained model (``--model`` or the registry's), a freshly initialised one of
the serving architecture is used: speed does not depend on the weights.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
from _common import REPO  # noqa: E402

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
    from engine.model import InputSpec, fresh_model, save_model_dir
    from engine.stages.encode import FieldIsolatedEncoder

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


def _event_json(i: int, rng: random.Random) -> dict:
    c = rng.randrange(1, 5001)
    return {"event_id": f"o{os.getpid()}-{i}", "event_time_ms": 1_722_470_400_000 + i * 37, "customer_id": f"C{c}",
            "account_id": f"A{c}", "terminal_id": f"T{rng.randrange(1, 10001)}", "merchant_category": "5411",
            "amount": round(rng.random() * 200, 2), "currency": "EUR", "channel": "ecommerce", "country": "BE",
            **({"memo": "invoice 4411"} if i % 5 == 0 else {})}


def loadgen(url: str, rate: float, duration: float, events_per_request: int) -> dict:
    """Open loop: request i is due at t0 + i/rate; latency counts from when it was due."""
    import asyncio
    import random

    import httpx

    async def run() -> dict:
        rng = random.Random(7)
        n = int(rate * duration)
        latencies: list[float] = []
        errors = 0
        # A bounded pool, as a real client has; requests waiting for a connection still count
        # their wait (latency is measured from the due time).
        limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
            loop = asyncio.get_running_loop()
            t0 = loop.time() + 0.2

            async def one(i: int) -> None:
                nonlocal errors
                due = t0 + i / rate
                await asyncio.sleep(max(0.0, due - loop.time()))
                body = [_event_json(i * events_per_request + k, rng) for k in range(events_per_request)]
                try:
                    r = await client.post("/v1/decide", json=body if events_per_request > 1 else body[0])
                    if r.status_code != 200:
                        errors += 1
                except httpx.HTTPError:
                    errors += 1
                latencies.append((loop.time() - due) * 1000.0)

            await asyncio.gather(*(one(i) for i in range(n)))
            elapsed = loop.time() - t0
        import numpy as np

        lat = np.array(latencies or [0.0])
        return {"target_rps": rate, "achieved_rps": len(latencies) / elapsed,
                "events_per_s": len(latencies) * events_per_request / elapsed,
                "p50_ms": float(np.percentile(lat, 50)), "p95_ms": float(np.percentile(lat, 95)),
                "p99_ms": float(np.percentile(lat, 99)), "errors": errors, "requests": len(latencies)}

    return asyncio.run(run())


def run_loadgen(url: str, rate: float, duration: int, events_per_request: int) -> dict:
    """The open-loop generator in its own process, so client and server do not share a GIL."""
    proc = subprocess.run([sys.executable, __file__, "--loadgen", url, "--rate", str(rate), "--duration",
                           str(duration), "--events-per-request", str(events_per_request)],
                          capture_output=True, text=True, timeout=duration * 4 + 120)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("TG_RESULT ")), None)
    if line is None:
        raise SystemExit(f"load generator failed:\n{proc.stderr[-2000:]}")
    return json.loads(line.removeprefix("TG_RESULT "))


def main() -> None:
    if "--loadgen" in sys.argv:
        lg = argparse.ArgumentParser()
        lg.add_argument("--loadgen")
        lg.add_argument("--rate", type=float)
        lg.add_argument("--duration", type=float)
        lg.add_argument("--events-per-request", type=int, default=1)
        a = lg.parse_args()
        print("TG_RESULT " + json.dumps(loadgen(a.loadgen, a.rate, a.duration, a.events_per_request)))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="25,50,100,200,0", help="target requests/s, comma separated; 0 = max")
    ap.add_argument("--duration", type=int, default=10, help="seconds per rate")
    ap.add_argument("--connections", type=int, default=8, help="wrk connections for the max-rate row")
    ap.add_argument("--events-per-request", type=int, default=1)
    ap.add_argument("--model", default=None, help="model directory (default: registry's, else an untrained one)")
    ap.add_argument("--memory", action="store_true", help="in-process context instead of Redis")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args()
    _common.stop_on_sigterm()  # a killed run still deletes what it made
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install wrk)")

    work = Path(tempfile.mkdtemp(prefix="tollgate-bench-http-"))
    lua = work / "post.lua"
    lua.write_text(LUA)
    model = args.model
    if model is None:
        from engine.model.locate import ModelNotFound, find_model_dir
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
            if rate > 0:
                results.append(run_loadgen(url, rate, args.duration, args.events_per_request))
            else:
                results.append(run_wrk(url, lua, 0, args.duration, args.connections, args.events_per_request))
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

    print(f"\nHTTP /v1/decide — fixed rates: open loop (latency from due time); max: wrk, {args.connections} "
          f"connections; {args.events_per_request} event(s)/request, "
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
