"""Prometheus metrics of the bot, served at ``GET /metrics`` (see :mod:`bot.health`).

All metrics live in one registry, :data:`REGISTRY` (not the process-global default, so
that tests and several app instances in one process do not collide).

| metric | type | labels | meaning |
|---|---|---|---|
| ``coderag_queries_total`` | counter | ``frontend``, ``outcome`` | questions answered; outcome ``answered`` / ``no_coverage`` / ``error`` |
| ``coderag_source_queries_total`` | counter | ``source`` | answers that used a chunk of this source (once per answer and source) |
| ``coderag_stage_latency_seconds`` | histogram | ``stage`` | ``retrieve``, ``expand``, ``generate`` (from ``Answer.latency_ms``) and ``post`` (front end delivery) |
| ``coderag_index_age_seconds`` | gauge | ``source`` | now − the source's ``indexed_at``, computed at scrape from ``service.status()`` |
| ``coderag_indexed_sources`` | gauge | — | number of indexed sources (same scrape) |
| ``coderag_webhook_queue_depth`` | gauge | — | repos with a re-index queued (webhooks, safety re-fetches), read at scrape through :func:`watch_webhook_queue`; NaN when unreadable |
| ``coderag_index_jobs`` | gauge | ``source``, ``status`` | index jobs waiting (``todo``), running (``doing``) and failed, read at scrape through :func:`watch_index_jobs` |
| ``coderag_index_queue_available`` | gauge | — | 1 when that scrape read the index jobs, 0 when it could not (the queue's database down or too slow: the read gives up after about 2 s) |
| ``coderag_errors_total`` | counter | ``kind`` | failures by kind (exception class name, or e.g. ``slack_post``, ``status_scrape``) |

Helpers never raise: a metrics problem must not break an answer.
"""
from __future__ import annotations

import logging
import time
from datetime import datetime, timezone
from typing import Callable, Iterable, Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

REGISTRY = CollectorRegistry(auto_describe=True)
STAGES = ("retrieve", "expand", "generate", "post")
# Seconds; answers take from ~50 ms (no coverage) to tens of seconds (Claude, retries).
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120)

QUERIES = Counter("coderag_queries_total", "Questions handled, by front end and outcome.",
                  ["frontend", "outcome"], registry=REGISTRY)
SOURCE_QUERIES = Counter("coderag_source_queries_total",
                         "Answers that used at least one chunk of the source.", ["source"], registry=REGISTRY)
STAGE_LATENCY = Histogram("coderag_stage_latency_seconds", "Time spent per answer stage.", ["stage"],
                          buckets=LATENCY_BUCKETS, registry=REGISTRY)
WEBHOOK_QUEUE_DEPTH = Gauge("coderag_webhook_queue_depth", "Webhook jobs waiting to be processed.",
                            registry=REGISTRY)
ERRORS = Counter("coderag_errors_total", "Failures, by kind.", ["kind"], registry=REGISTRY)


def watch_webhook_queue(depth: Callable[[], int]) -> None:
    """Read ``coderag_webhook_queue_depth`` from ``depth()`` at each scrape (``coderag
    serve`` passes the freshness runtime's ``workers.pending``). A failed read never fails
    the scrape: the gauge reads NaN (unknown) and one warning line says why, the other
    metrics are served as usual."""
    def read() -> float:
        try:
            return float(max(0, int(depth())))
        except Exception as exc:  # noqa: BLE001 - a scrape never fails on an unreadable queue
            record_error("queue_depth_scrape")
            log.warning("coderag_webhook_queue_depth: cannot read the queue depth (%s)", _one_line(exc))
            return float("nan")

    WEBHOOK_QUEUE_DEPTH.set_function(read)


def _one_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (secrets masked), for a log line."""
    from common.redact import redact_text

    first = (str(exc).strip().splitlines() or [""])[0][:200]
    return redact_text(f"{type(exc).__name__}: {first}" if first else type(exc).__name__)


class _IndexJobs:
    """Collector of ``coderag_index_jobs{source,status}``: index jobs waiting (``todo``),
    running (``doing``) and failed, per repository or space, read at each scrape."""

    def __init__(self) -> None:
        self.counts: Callable[[], Mapping] | None = None

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        family = GaugeMetricFamily("coderag_index_jobs", "Index jobs by source and status (todo: waiting, "
                                   "doing: running, failed).", labels=["source", "status"])
        available = 1.0
        try:
            by = dict((self.counts() if self.counts else {}).get("by_source") or {})
        except Exception as exc:  # noqa: BLE001 - a scrape never fails on an unreadable queue
            record_error("index_jobs_scrape")
            log.warning("coderag_index_jobs: cannot read the index queue (%s)", _one_line(exc))
            by, available = {}, 0.0
        for source, states in sorted(by.items()):
            for status in ("todo", "doing", "failed"):
                family.add_metric([str(source), status], float(states.get(status, 0)))
        yield family
        if self.counts is not None:
            yield GaugeMetricFamily("coderag_index_queue_available", "1 when this scrape read the index jobs, 0 "
                                    "when the queue could not be read in time.", value=available)


_INDEX_JOBS = _IndexJobs()
REGISTRY.register(_INDEX_JOBS)


def watch_index_jobs(counts: Callable[[], Mapping]) -> None:
    """Read ``coderag_index_jobs`` from ``counts()`` at each scrape (``coderag serve``
    passes the freshness runtime's ``workers.counts``: the in-process workers, or the
    index queue shared by every ``coderag worker``)."""
    _INDEX_JOBS.counts = counts


def set_webhook_queue_depth(n: int) -> None:
    """Set the webhook queue depth gauge to ``n`` jobs (replaces a :func:`watch_webhook_queue` source)."""
    try:
        value = max(0, int(n))
        WEBHOOK_QUEUE_DEPTH.set_function(lambda: value)
    except Exception:  # pragma: no cover - defensive
        log.debug("set_webhook_queue_depth(%r) failed", n, exc_info=True)


def record_error(kind: str | BaseException) -> None:
    """Count one failure. ``kind``: a short label, or an exception (its class name is used)."""
    label = type(kind).__name__ if isinstance(kind, BaseException) else str(kind or "unknown")
    ERRORS.labels(kind=label[:64]).inc()


def observe_stage(stage: str, seconds: float) -> None:
    """One observation of ``stage`` (one of :data:`STAGES`) lasting ``seconds``."""
    if seconds >= 0:
        STAGE_LATENCY.labels(stage=stage).observe(seconds)


def observe_answer(answer, *, frontend: str, post_seconds: float | None = None) -> None:
    """Record a finished ``bot.answer.service.Answer``: the query counter, each stage of
    ``answer.latency_ms`` (milliseconds), ``post_seconds`` if the front end delivered it,
    and the sources its hits came from. Never raises."""
    try:
        outcome = "no_coverage" if getattr(answer, "no_coverage", False) else "answered"
        QUERIES.labels(frontend=frontend, outcome=outcome).inc()
        for stage, ms in (getattr(answer, "latency_ms", None) or {}).items():
            if stage in STAGES and ms is not None:
                observe_stage(stage, float(ms) / 1000.0)
        if post_seconds is not None:
            observe_stage("post", post_seconds)
        used = {h.chunk.repo for h in (getattr(answer, "hits", None) or []) if getattr(h, "chunk", None)}
        for source in sorted(used):
            SOURCE_QUERIES.labels(source=source).inc()
    except Exception:  # pragma: no cover - defensive
        log.debug("observe_answer failed", exc_info=True)


def observe_failure(exc: BaseException, *, frontend: str) -> None:
    """A question that failed with ``exc``: counted as outcome ``error`` and by kind."""
    QUERIES.labels(frontend=frontend, outcome="error").inc()
    record_error(exc)


class IndexAgeCollector(Collector):
    """Gauges computed at scrape time from ``status()`` (``service.status``): a list of
    source dicts with ``name`` and ``indexed_at`` (datetime or ISO text)."""

    def __init__(self, status: Callable[[], Iterable[Mapping]], now: Callable[[], float] = time.time):
        self.status = status
        self.now = now

    def describe(self):
        return []  # computed per scrape: nothing to check at registration

    def collect(self):
        age = GaugeMetricFamily("coderag_index_age_seconds", "Seconds since the source was last indexed.",
                                labels=["source"])
        count = GaugeMetricFamily("coderag_indexed_sources", "Indexed sources.")
        try:
            sources = list(self.status())
        except Exception as exc:
            record_error("status_scrape")
            log.warning("index age scrape failed: %s", exc)
            sources = None
        if sources is not None:
            now = self.now()
            for s in sources:
                ts = _timestamp(s.get("indexed_at"))
                if ts is not None:
                    age.add_metric([str(s.get("name", ""))], max(0.0, now - ts))
            count.add_metric([], len(sources))
        yield age
        yield count


_index_age: IndexAgeCollector | None = None


def watch_index_age(status: Callable[[], Iterable[Mapping]]) -> None:
    """Compute ``coderag_index_age_seconds`` from ``status()`` at each scrape (replaces a
    previous provider: one app per process)."""
    global _index_age
    if _index_age is not None:
        REGISTRY.unregister(_index_age)
    _index_age = IndexAgeCollector(status)
    REGISTRY.register(_index_age)


def render() -> tuple[bytes, str]:
    """``(body, content_type)`` of the Prometheus text exposition of :data:`REGISTRY`."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def _timestamp(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.timestamp()
    return None
