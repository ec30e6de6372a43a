"""Readiness and metrics endpoints: a route provider for ``bot.server.ROUTE_PROVIDERS``.

* ``GET /readyz`` — 200 ``{"ready": true, "checks": {"weaviate": "ok", "database": "ok"}}``
  when Weaviate answers its readiness probe and the SQL database runs ``SELECT 1`` (for
  PostgreSQL also on a new connection: a frozen server answers only on pooled ones);
  503 ``{"ready": false, "failed": ["weaviate"], "checks": {"weaviate": "error: …", …}}``
  otherwise. Each check has :data:`CHECK_TIMEOUT_S` seconds. A Kubernetes readiness probe
  and the compose health check point here, so a bot replica that lost its Weaviate or
  its database stops receiving Slack traffic until it recovers.
* ``GET /metrics`` — Prometheus text format (:mod:`bot.metrics`), **not** on the public
  port: it names every source (channel-restricted ones included) with query counts and
  index age. :func:`metrics_app` is the separate listener ``coderag serve`` runs on
  ``CODERAG_METRICS_HOST:CODERAG_METRICS_PORT`` (default ``127.0.0.1:9464``), optionally
  behind a bearer token (``CODERAG_METRICS_TOKEN``).

``GET /healthz`` (liveness: the process is up) stays in :mod:`bot.server`.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from . import metrics

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 3.0


def weaviate_check(store: Any) -> Callable[[], None]:
    """A check that raises unless the store's Weaviate connection reports ready."""

    def check() -> None:
        if not store.schema.is_ready():
            raise RuntimeError("Weaviate is not ready")

    return check


def database_check(sessions: Any) -> Callable[[], None]:
    """A check that raises unless the SQL database answers *and can write*: one committed
    transaction that inserts and deletes a probe row (a full disk, a read-only file or a
    held write lock fail it; answering without writing would lose dedupe and the log)."""

    def check() -> None:
        import uuid

        from sqlalchemy import text

        _fresh_connection(sessions.kw.get("bind"))
        probe = f"readyz:{uuid.uuid4().hex}"
        with sessions() as s, s.begin():
            s.execute(text("SELECT 1"))
            s.execute(text("INSERT INTO slack_events (event_id, received_at) VALUES (:id, CURRENT_TIMESTAMP)"),
                      {"id": probe})
            s.execute(text("DELETE FROM slack_events WHERE event_id = :id"), {"id": probe})

    return check


#: Seconds a new PostgreSQL connection of the readiness check may take (libpq's
#: ``connect_timeout``, whole seconds).
FRESH_CONNECT_S = 2


def _fresh_connection(engine: Any) -> None:
    """Open a new connection (not one of the pool's) to a PostgreSQL ``engine`` and run
    ``SELECT 1``: a frozen server (its postmaster stopped) still serves the pool's
    connections, whose backends run on, but accepts no new one, which every other process
    (a worker, the queue) needs. Nothing for another database."""
    if engine is None or engine.dialect.name != "postgresql":
        return
    from common.db import libpq_limits

    cargs, cparams = engine.dialect.create_connect_args(engine.url)
    conn = engine.dialect.connect(*cargs, **dict(cparams, **libpq_limits(FRESH_CONNECT_S)))
    try:
        cur = conn.cursor()
        cur.execute("SELECT 1")
        cur.fetchone()
    finally:
        conn.close()


async def run_checks(checks: dict[str, Callable[[], None]],
                     timeout_s: float = CHECK_TIMEOUT_S) -> dict[str, str]:
    """Run blocking ``checks`` concurrently in threads: ``{name: "ok" | "error: reason"}``."""

    async def one(fn: Callable[[], None]) -> str:
        try:
            await asyncio.wait_for(run_in_threadpool(fn), timeout=timeout_s)
            return "ok"
        except asyncio.TimeoutError:
            return f"error: no answer within {timeout_s:g}s"
        except Exception as exc:  # the reason goes to the probe's body and the log
            return f"error: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}"

    names = list(checks)
    results = await asyncio.gather(*(one(checks[n]) for n in names))
    return dict(zip(names, results))


def readiness_checks(ctx: Any) -> dict[str, Callable[[], None]]:
    """The checks for a ``ServerContext``: Weaviate (its store, else the answer service's)
    and the SQL database (when the server has one)."""
    checks: dict[str, Callable[[], None]] = {}
    store = ctx.store if ctx.store is not None else getattr(ctx.service, "store", None)
    if store is not None:
        checks["weaviate"] = weaviate_check(store)
    if ctx.sessions is not None:
        checks["database"] = database_check(ctx.sessions)
    return checks


async def _damaged_sources(ctx: Any) -> dict[str, str]:
    """``{source: what is wrong}`` for source records that failed validation on read."""
    import anyio

    store = ctx.store if ctx.store is not None else getattr(ctx.service, "store", None)
    if store is None:
        return {}
    try:
        records = await anyio.to_thread.run_sync(store.sources.all)
    except Exception:  # noqa: BLE001 - the Weaviate check above reports reachability
        return {}
    return {r.name: r.damaged for r in records if getattr(r, "damaged", "")}


#: ``index_jobs`` in the ``/readyz`` body when the queue cannot be read in time.
JOBS_UNAVAILABLE = "unavailable"


async def _index_jobs(ctx: Any, timeout_s: float = CHECK_TIMEOUT_S) -> dict | str | None:
    """The freshness runtime's index jobs (``{"todo", "doing", "failed", "by_source"}``),
    ``None`` without a runtime, :data:`JOBS_UNAVAILABLE` when the queue cannot be read
    within ``timeout_s`` seconds (said, not left out of the body)."""
    runtime = getattr(ctx, "freshness", None)
    if runtime is None:
        return None
    try:
        return await asyncio.wait_for(run_in_threadpool(runtime.workers.counts), timeout=timeout_s)
    except Exception as exc:  # noqa: BLE001 - the database check reports reachability
        log.warning("index jobs unreadable: %s", type(exc).__name__)
        return JOBS_UNAVAILABLE


def ops_routes(ctx: Any) -> list[BaseRoute]:
    """``/readyz`` for ``ctx`` (a ``bot.server.ServerContext``), on the public port; also
    feeds the index-age gauges of the metrics listener (:func:`metrics_app`) from the
    service's ``status()``."""
    checks = readiness_checks(ctx)
    if ctx.service is not None and callable(getattr(ctx.service, "status", None)):
        metrics.watch_index_age(ctx.service.status)

    async def readyz(_request: Request) -> Response:
        results = await run_checks(checks)
        failed = [name for name, r in results.items() if r != "ok"]
        damaged = await _damaged_sources(ctx) if not failed else {}
        if failed:
            for name in failed:
                metrics.record_error(f"not_ready_{name}")
            log.warning("not ready: %s", results)
            return JSONResponse({"ready": False, "failed": failed, "checks": results}, status_code=503)
        body = {"ready": True, "checks": results}
        jobs = await _index_jobs(ctx)
        if jobs is not None:  # queue depth, running and failed jobs, or "unavailable" (never a reason to be unready)
            body["index_jobs"] = jobs
        if damaged:  # one source's damage is reported, not a reason to stop serving the others
            body["damaged_sources"] = damaged
        return JSONResponse(body)

    return [Route("/readyz", readyz, methods=["GET"])]


def metrics_routes(token: str | None = None) -> list[BaseRoute]:
    """``GET /metrics`` (Prometheus text). With ``token``, a request without
    ``Authorization: Bearer <token>`` gets 401 (constant-time comparison)."""
    import hmac

    expected = f"Bearer {token}".encode() if token else None

    async def metrics_endpoint(request: Request) -> Response:
        if expected is not None and not hmac.compare_digest(
                (request.headers.get("authorization") or "").strip().encode(), expected):
            return JSONResponse({"error": "bearer token required"}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"})
        body, content_type = await run_in_threadpool(metrics.render)
        return Response(body, media_type=content_type)

    return [Route("/metrics", metrics_endpoint, methods=["GET"])]


def metrics_app(token: str | None = None):
    """The ASGI app of the separate metrics listener: only ``/metrics`` (see :func:`metrics_routes`)."""
    from starlette.applications import Starlette

    return Starlette(routes=metrics_routes(token))


def start_metrics_listener(settings: Any):
    """Serve :func:`metrics_app` on ``settings.metrics_host:metrics_port`` in a background
    thread; returns the server (``stop()`` it), or ``None`` when the port is 0 or cannot be
    bound (a warning says so: metrics are not worth refusing to serve Slack for, e.g. when
    two ``coderag serve`` share a host — give each its own ``CODERAG_METRICS_PORT``)."""
    from .background_server import BackgroundServer

    port = int(getattr(settings, "metrics_port", 0) or 0)
    if not port:
        return None
    host = getattr(settings, "metrics_host", "127.0.0.1") or "127.0.0.1"
    try:
        return BackgroundServer(metrics_app(getattr(settings, "metrics_token", None)), host=host, port=port).start()
    except (RuntimeError, OSError, SystemExit):
        log.warning("cannot listen for /metrics on %s:%d (port in use?); serving without metrics. Set "
                    "CODERAG_METRICS_PORT to a free port, or 0 to turn the listener off", host, port)
        return None
