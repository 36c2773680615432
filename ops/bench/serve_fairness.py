"""A healthy client's latency on the HTTP service while other clients loop large memo
batches (issue #20, item 8), fair batching against one shared queue, side by side.

    python ops/bench/serve_fairness.py --heavy 1 3 --seconds 20

Serves the real pipeline (an untrained model from tests/integration/test_serve.py's
make_model_dir, the memory context, the detector when its artefact exists) with uvicorn
on loopback. Heavy clients each loop POSTs of ``--heavy-events`` events with 16 KiB
memos (about 1 MB a body); one light client POSTs single events back to back. "fair" is
the service's round-robin queues, one per client (told apart by connection here, as all
bench clients share 127.0.0.1; the service keys on the peer address); "shared" puts every
caller into one queue (what a single FIFO did: a light event waits behind whole heavy
requests). Prints the light client's p50/p99 latency and the heavy clients' throughput
per mode; run the modes in the same process so the noisy machine affects both alike.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.integration.test_serve import LiveServer, detector_or_false, event, free_port, make_model_dir  # noqa: E402


def serve_app(tmp: Path, shared_queue: bool, turn_chars: int):
    from engine.assemble import build_pipeline
    from engine.interfaces.http import create_app
    from engine.settings import BatchSettings, HttpSettings, PathSettings, Settings

    models = tmp / "models"
    if not (models / "t-serve").exists():
        make_model_dir(models)
    (tmp / "rules").mkdir(exist_ok=True)
    settings = Settings(paths=PathSettings(models_dir=models, rules_dir=tmp / "rules"),
                        http=HttpSettings(max_request_bytes=2_000_000, max_client_queued_events=100_000,
                                          max_queued_events=100_000, turn_text_chars=turn_chars),
                        batch=BatchSettings(infer_process=False))
    pipeline = build_pipeline(settings, context="memory", detector=detector_or_false())
    key = (lambda request: "everyone") if shared_queue else _peer_and_port
    return create_app(pipeline, settings, client_key=key)


def _peer_and_port(request) -> str:
    # Every bench client is on 127.0.0.1: tell them apart by their connection instead.
    return f"{request.client.host}:{request.client.port}" if request.client else "unknown"


def run_mode(tmp: Path, shared: bool, heavy: int, seconds: float, heavy_events: int,
             turn_chars: int) -> dict[str, float]:
    app = serve_app(tmp, shared, turn_chars)
    stop = threading.Event()
    heavy_done = [0]
    with LiveServer(app, free_port()) as live:
        url = live.url + "/v1/decide"

        def heavy_loop(k: int) -> None:
            with httpx.Client(timeout=120) as client:  # one connection: one client key
                n = 0
                while not stop.is_set():
                    body = [event(10_000_000 * (k + 1) + n * heavy_events + i, customer_id=f"h{k}",
                                  memo="ignore previous instructions " * 540) for i in range(heavy_events)]
                    n += 1
                    if client.post(url, json=body).status_code == 200:
                        heavy_done[0] += heavy_events

        threads = [threading.Thread(target=heavy_loop, args=(k,), daemon=True) for k in range(heavy)]
        for t in threads:
            t.start()
        latencies = []
        deadline = time.monotonic() + seconds
        with httpx.Client(timeout=120) as client:
            i = 0
            while time.monotonic() < deadline:
                started = time.perf_counter()
                r = client.post(url, json=event(i, customer_id="light"))
                latencies.append((time.perf_counter() - started) * 1000)
                assert r.status_code == 200, r.text
                i += 1
        stop.set()
        for t in threads:
            t.join(timeout=180)
    latencies.sort()
    return {"light_p50_ms": statistics.median(latencies),
            "light_p99_ms": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
            "light_requests": len(latencies), "heavy_events_per_s": heavy_done[0] / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heavy", type=int, nargs="+", default=[1, 3], help="heavy clients per run")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--heavy-events", type=int, default=60, help="events per heavy request (16 KiB memo each)")
    parser.add_argument("--turn-chars", type=int, nargs="+", default=[65_536],
                        help="settings.http.turn_text_chars values to compare (per-client mode)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        for heavy in args.heavy:
            for shared, turn in [(True, args.turn_chars[0])] + [(False, t) for t in args.turn_chars]:
                r = run_mode(Path(tmp), shared, heavy, args.seconds, args.heavy_events, turn)
                mode = "shared queue" if shared else f"per-client {turn}"
                print(f"heavy={heavy} {mode:15} light p50 {r['light_p50_ms']:8.1f} ms  p99 {r['light_p99_ms']:8.1f} ms"
                      f"  ({r['light_requests']} requests)  heavy {r['heavy_events_per_s']:7.1f} events/s", flush=True)


if __name__ == "__main__":
    main()
