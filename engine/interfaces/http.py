"""The HTTP scoring service (``tollgate serve``): ``POST /v1/decide`` for callers that are
not Kafka producers, with the same ``DecisionPipeline`` as the stream.

- **Micro-batching across connections, fair between clients.** Requests are cut into
  chunks queued per client (peer address); one batcher takes them round-robin into
  batches and runs one ``decide_batch`` at a time in a worker thread, so the event loop
  never blocks on the model and concurrent callers share a forward pass. A client over
  its share of queued events gets 429, a full queue 503, both at once
  (``engine.interfaces.http_batcher``).
- **Safety.** When ``settings.http.api_token`` is set, every scoring and metrics call
  needs ``Authorization: Bearer <token>`` (compared with ``hmac.compare_digest``, in
  constant time); ``run`` refuses a non-loopback address without one. A body must be
  JSON (else 415), arrive within ``body_timeout_s`` (else 408) and stay under
  ``max_request_bytes`` (else 413) (``engine.interfaces.http_guard``); malformed JSON gets 400
  naming the line and column; a bad field gets 422 naming the field.
- **Context.** The pipeline's store decides what is read and written: ``tollgate serve``
  reads the stream's Redis context and records nothing unless
  ``http.record_context`` is on (which needs a token).
- **Health.** ``/healthz`` (process alive), ``/readyz`` (200 only after the warm-up
  batch), ``/metrics`` (Prometheus), ``/openapi.json`` + ``/docs``. The warm-up runs in
  the background *after* startup, so the socket is open while it runs: ``/healthz``
  answers 200 throughout, ``/readyz`` and ``/v1/decide`` answer 503 (with
  ``Retry-After``) until it is done. A warm-up that fails leaves the service unready
  and turns ``/healthz`` to 500, so a liveness probe restarts it.
"""

# No ``from __future__ import annotations``: FastAPI must see the endpoint annotations
# as objects, and some of them close over values built in ``create_app``.
import asyncio
import hmac
import logging
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Body, Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from engine.interfaces.http_batcher import FairBatcher, Overloaded
from engine.interfaces.http_guard import BodyGuard, check_exposure
from engine.interfaces.http_models import ERROR_RESPONSES, EventIn, VerdictOut
from engine.observe.metrics import BATCH_BUCKETS, STAGE_BUCKETS_MS
from engine.pipeline import STAGES, BatchTimings, DecisionPipeline
from engine.records import EventValidationError, Verdict, event_from_json
from engine.settings import Settings

log = logging.getLogger(__name__)


class ServeMetrics:
    """The service's own Prometheus registry (so several apps in one test process do not
    clash). Pipeline metrics use the worker's names and buckets (``engine.observe.metrics``), so
    one Grafana dashboard shows both; HTTP metrics are the service's own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("tollgate_http_requests", "Scoring requests by HTTP status", ["status"], registry=r)
        self.verdicts = Counter("tollgate_verdicts", "Verdicts by outcome and first reason.", ["verdict", "reason"],
                                registry=r)
        self.request_ms = Histogram(
            "tollgate_http_request_ms", "Request arrival → response (ms), batching wait included.",
            buckets=(0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 50, 75, 100, 250, 500, 1000, 2500), registry=r)
        self.batch_size = Histogram("tollgate_batch_size", "Events per decide_batch.", buckets=BATCH_BUCKETS,
                                    registry=r)
        self.stage_latency = Histogram("tollgate_stage_latency_ms", "Time spent per pipeline stage per batch (ms).",
                                       ["stage"], buckets=STAGE_BUCKETS_MS, registry=r)
        self.degraded_verdicts = Counter("tollgate_degraded_verdicts",
                                         "Verdicts decided in degraded mode (context_unavailable).", registry=r)

    def observe_batch(self, t: BatchTimings) -> None:
        self.batch_size.observe(t.size)
        for stage in STAGES:
            self.stage_latency.labels(stage).observe(t.stage_ms[stage])
        if t.degraded:
            self.degraded_verdicts.inc(t.size)

    def observe_verdicts(self, verdicts: list[Verdict]) -> None:
        for v in verdicts:
            first = v.reasons[0] if v.reasons else None
            self.verdicts.labels(v.verdict.value, f"{first.kind.value}:{first.code}" if first else "none").inc()


def create_app(pipeline: DecisionPipeline, settings: Settings | None = None, *,
               warmup: bool | Callable[[], float] = True,
               client_key: Callable[[Request], str] | None = None) -> FastAPI:
    """The ASGI app around ``pipeline``. Readiness turns true once the warm-up finished:
    ``warmup=True`` runs ``pipeline.warmup``, ``False`` none, and a callable runs in its
    place (it returns the seconds it took) — e.g. a warm-up that first waits for a gate.
    ``client_key``: whom fairness and the per-client limit are per (default: the peer
    address)."""
    settings = settings or Settings()
    http = settings.http
    key_of = client_key or peer_address
    token = http.api_token.get_secret_value().encode() if http.api_token is not None else None
    metrics = ServeMetrics()
    previous_observer = pipeline.on_batch

    def observe(t: BatchTimings) -> None:
        metrics.observe_batch(t)
        if previous_observer is not None:
            previous_observer(t)

    state: dict[str, Any] = {"ready": False, "batcher": None, "warmup_s": None, "warmup_error": None}
    warmup_fn: Callable[[], float] | None = (pipeline.warmup if warmup is True else warmup) or None

    async def warm_up(batcher: FairBatcher) -> None:
        try:
            if warmup_fn is not None:
                state["warmup_s"] = await batcher.run_in_decide_thread(warmup_fn)
        except Exception as exc:  # noqa: BLE001 - reported by /healthz and /readyz, logged here
            log.exception("warm-up failed; the service stays unready")
            state["warmup_error"] = f"{type(exc).__name__}: {exc}"
            return
        state["ready"] = True

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        pipeline.on_batch = observe
        batcher = FairBatcher(pipeline, settings.batch.max_events, settings.batch.max_wait_ms,
                              max_queued_events=http.max_queued_events,
                              max_client_events=http.max_client_queued_events,
                              max_text_chars=http.turn_text_chars)
        batcher.start()
        state["batcher"] = batcher
        # Not awaited here: uvicorn opens the socket only once startup returns, and
        # readiness is only observable (as false) while the socket is open.
        warming = asyncio.get_running_loop().create_task(warm_up(batcher), name="tollgate-warmup")
        try:
            yield
        finally:
            state["ready"] = False
            warming.cancel()  # the thread itself runs to its end; batcher.stop waits for it
            await batcher.stop()
            pipeline.on_batch = previous_observer

    app = FastAPI(
        title="Tollgate scoring service",
        version="1",
        description="Risk verdicts (pass / review / reject) for transaction events — the same "
                    "pipeline, policy and rules as the Kafka stream.",
        lifespan=lifespan,
    )
    app.add_middleware(BodyGuard, max_bytes=http.max_request_bytes, timeout_s=http.body_timeout_s)
    bearer = HTTPBearer(auto_error=False, description="Required when TOLLGATE_HTTP__API_TOKEN is set.")

    def authorise(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> None:
        if token is None:
            return
        given = credentials.credentials.encode() if credentials is not None else b""
        # compare_digest on equal-type bytes: the time taken does not reveal the matching prefix.
        if not hmac.compare_digest(given, token):
            raise HTTPException(401, "missing or wrong API token (Authorization: Bearer <token>)",
                                headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        for err in errors:
            if err.get("type") == "json_invalid":
                where = _line_and_column(exc.body, err.get("loc", ("body", None))[-1])
                why = (err.get("ctx") or {}).get("error", "not valid JSON")
                return JSONResponse({"detail": f"malformed JSON at {where}: {why}"}, status_code=400)
        detail = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")} for e in errors]
        return JSONResponse({"detail": detail}, status_code=422)

    @app.post("/v1/decide", response_model=VerdictOut | list[VerdictOut], responses=ERROR_RESPONSES,
              dependencies=[Depends(authorise)], summary="Verdicts for one event or an array of events")
    async def decide_endpoint(
        request: Request,
        body: Annotated[EventIn | Annotated[list[EventIn], Body(max_length=http.max_events_per_request)],
                        Body(description="One event, or a JSON array of events (verdicts come back in the same order).")],
    ) -> Any:
        started = time.perf_counter()
        arrival_ms = time.time() * 1000.0
        single = not isinstance(body, list)
        items = [body] if single else body
        try:
            events = [event_from_json(item.model_dump()) for item in items]
        except EventValidationError as exc:
            metrics.requests.labels("422").inc()
            raise HTTPException(422, f"invalid event: {exc}") from None
        if not events:
            return []
        if not state["ready"]:
            metrics.requests.labels("503").inc()
            why = (f"not ready: the warm-up failed ({state['warmup_error']})" if state["warmup_error"]
                   else "not ready: the model is warming up; retry in a second (GET /readyz says when it is ready)")
            raise HTTPException(503, why, headers={"Retry-After": "1"})
        try:
            verdicts = await state["batcher"].submit(events, arrival_ms, client=key_of(request))
        except Overloaded as exc:
            metrics.requests.labels(str(exc.status)).inc()
            raise HTTPException(exc.status, exc.detail, headers={"Retry-After": "1"}) from None
        metrics.requests.labels("200").inc()
        metrics.request_ms.observe((time.perf_counter() - started) * 1000.0)
        metrics.observe_verdicts(verdicts)
        out = [v.to_dict() for v in verdicts]
        return out[0] if single else out

    @app.get("/healthz", response_class=PlainTextResponse, summary="The process is alive",
             responses={500: {"description": "The warm-up failed: the process cannot serve and should be restarted"}})
    async def healthz() -> PlainTextResponse:
        if state["warmup_error"]:
            return PlainTextResponse(f"warm-up failed: {state['warmup_error']}", status_code=500)
        return PlainTextResponse("ok")

    @app.get("/readyz", summary="Ready to score (after warm-up)",
             responses={503: {"description": "Still warming up"}})
    async def readyz() -> JSONResponse:
        body = {"ready": state["ready"], "model_version": pipeline.model_version,
                "rules_version": pipeline.rules_version, "warmup_s": state["warmup_s"],
                "warmup_error": state["warmup_error"]}
        return JSONResponse(body, status_code=200 if state["ready"] else 503)

    @app.get("/metrics", dependencies=[Depends(authorise)], response_class=PlainTextResponse,
             summary="Prometheus metrics", responses={401: ERROR_RESPONSES[401]})
    async def prometheus_metrics() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    app.state.metrics = metrics
    app.state.pipeline = pipeline
    return app


def run(pipeline: DecisionPipeline, settings: Settings, host: str | None = None, port: int | None = None,
        log_level: str = "info") -> None:
    """Serve until SIGINT/SIGTERM (uvicorn handles both and drains open requests)."""
    # local: uvicorn loads only when serving HTTP
    import uvicorn

    host = host or settings.http.host
    check_exposure(host, settings.http)  # before anything listens
    app = create_app(pipeline, settings)
    uvicorn.run(app, host=host, port=port or settings.http.serve_port,
                log_level=log_level, access_log=False, limit_concurrency=2048)


def peer_address(request: Request) -> str:
    """Whom fairness is per: the peer address (behind a proxy, every caller is the proxy;
    docs/security.md says to rate-limit there too)."""
    return request.client.host if request.client is not None else "unknown"


def _line_and_column(doc: Any, pos: Any) -> str:
    """``line L, column C (character P)`` of a JSON decode position in ``doc``.

    >>> _line_and_column('[{"a": 1},\\n {"a": ]', 18)
    'line 2, column 8 (character 18)'
    """
    if not isinstance(doc, str) or not isinstance(pos, int):
        return f"character {pos}"
    line = doc.count("\n", 0, pos) + 1
    column = pos - (doc.rfind("\n", 0, pos) + 1) + 1
    return f"line {line}, column {column} (character {pos})"


__all__ = ["ServeMetrics", "create_app", "run"]
