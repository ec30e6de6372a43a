"""``/readyz`` on the real server app (bot.server.build_asgi) and ``/metrics`` on the metrics
listener's app (bot.health.metrics_app), against a
real weaviate-server and a real SQLite database; failures are real unreachable services."""
from __future__ import annotations

import socket

import pytest
import weaviate
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from bot import metrics
from bot.health import metrics_app
from bot.answer.service import AnswerService
from bot.server import ROUTE_PROVIDERS, ServerContext, build_asgi, ops_routes
from common.settings import load
from helpers.gitrepo import make_git_repo
from common.db import open_database
from common.errors import BadInput
from common.settings import Settings
from indexer import ChunkStore, index_repository

pytestmark = pytest.mark.weaviate

FILES = {"billing/invoice.py": '''def invoice_total(lines):
    """Sum of the invoice lines, in cents."""
    return sum(lines)
'''}


def _samples(body: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for fam in text_string_to_metric_families(body):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _dead_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def service(tmp_path, settings_env, store, local_embedder, monkeypatch):
    monkeypatch.setenv("CODERAG_DATABASE_URL", f"sqlite:///{tmp_path / 'health.db'}")
    sessions = open_database(Settings.from_env())
    repo = make_git_repo(tmp_path, FILES, name="billing")
    index_repository(repo, settings=Settings.from_env(), store=store, embedder=local_embedder, sessions=sessions)
    return AnswerService(store, local_embedder, top_k=3, sessions=sessions), sessions


def test_ops_routes_are_registered():
    assert ops_routes in ROUTE_PROVIDERS


def test_readyz_ok_when_weaviate_and_database_answer(service):
    svc, sessions = service
    with TestClient(build_asgi(ServerContext(service=svc, sessions=sessions))) as client:
        r = client.get("/readyz")
        assert r.status_code == 200, r.text
        assert r.json() == {"ready": True, "checks": {"weaviate": "ok", "database": "ok"}}
        assert client.get("/healthz").status_code == 200


def test_readyz_names_the_unreachable_database(service, tmp_path):
    svc, _ = service
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    # A PostgreSQL URL on a port nobody listens on: the connection is refused.
    broken = sessionmaker(create_engine(f"postgresql+psycopg://u:p@127.0.0.1:{_dead_port()}/x",
                                        connect_args={"connect_timeout": 2}))
    with TestClient(build_asgi(ServerContext(service=svc, sessions=broken))) as client:
        r = client.get("/readyz")
    assert r.status_code == 503
    body = r.json()
    assert body["ready"] is False and body["failed"] == ["database"]
    assert body["checks"]["weaviate"] == "ok" and body["checks"]["database"].startswith("error:")


def test_readyz_names_the_unreachable_weaviate(service, local_embedder, weaviate_binary, tmp_path):
    """A second real weaviate-server, connected to and then killed: /readyz turns 503."""
    from indexer.store.weaviate_server import start_server

    _, sessions = service
    proc, info = start_server(weaviate_binary, tmp_path / "w2", tmp_path / "w2.log", detach=False)
    client = weaviate.connect_to_custom(http_host="127.0.0.1", http_port=info.http_port, http_secure=False,
                                        grpc_host="127.0.0.1", grpc_port=info.grpc_port, grpc_secure=False)
    try:
        svc = AnswerService(ChunkStore(client), local_embedder, sessions=sessions)
        with TestClient(build_asgi(ServerContext(service=svc, sessions=sessions))) as http:
            assert http.get("/readyz").status_code == 200
            proc.kill()
            proc.wait(timeout=30)
            r = http.get("/readyz")
        assert r.status_code == 503
        assert r.json()["failed"] == ["weaviate"]
        assert r.json()["checks"]["database"] == "ok"
    finally:
        client.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def test_metrics_exposes_queries_latency_index_age_queue_and_errors(service):
    svc, sessions = service
    before = _samples(metrics.render()[0].decode())
    answer = svc.ask("how is the invoice total computed?")
    metrics.observe_answer(answer, frontend="slack", post_seconds=0.02)
    metrics.set_webhook_queue_depth(7)
    metrics.record_error(TimeoutError("slow"))
    build_asgi(ServerContext(service=svc, sessions=sessions))  # feeds the index-age gauges
    with TestClient(metrics_app()) as client:  # the separate metrics listener's app
        r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    after = _samples(r.text)

    def delta(name, **labels):
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert delta("coderag_queries_total", frontend="slack", outcome="answered") == 1
    assert delta("coderag_source_queries_total", source="billing") == 1
    for stage in ("retrieve", "expand", "generate", "post"):
        assert delta("coderag_stage_latency_seconds_count", stage=stage) == 1
    assert after[("coderag_stage_latency_seconds_sum", (("stage", "retrieve"),))] > 0
    age = after[("coderag_index_age_seconds", (("source", "billing"),))]
    assert 0 <= age < 600  # indexed moments ago
    assert after[("coderag_indexed_sources", ())] == 1
    assert after[("coderag_webhook_queue_depth", ())] == 7
    assert delta("coderag_errors_total", kind="TimeoutError") == 1


def test_server_role(monkeypatch):
    role = lambda env: load(env).process.role  # noqa: E731
    assert role({}) == "all"
    assert role({"CODERAG_ROLE": "Indexer"}) == "indexer"
    with pytest.raises(BadInput, match="^CODERAG_ROLE must be one of"):
        role({"CODERAG_ROLE": "scheduler"})


def test_expand_stage_is_timed_apart_from_retrieve(service):
    """queries.expand_ms is the call-graph expansion's own time (it used to be a constant 0)."""
    svc, _ = service
    answer = svc.ask("who calls the invoice total computation?")
    result = svc.retriever.search("who calls the invoice total computation?", top_k=3)
    assert result.expand_ms > 0.0  # expansion ran (a call graph is indexed) and was timed
    assert answer.latency_ms["expand"] > 0.0 and answer.latency_ms["retrieve"] >= 0.0
    no_graph = svc.retriever.search("who calls the invoice total computation?", top_k=3, expand_graph=False)
    assert no_graph.expand_ms == 0.0


def test_webhook_queue_depth_is_read_from_the_repo_workers(tmp_path):
    """`coderag serve` points the gauge at the freshness runtime's workers (bot.wiring):
    the value follows their queue at each scrape instead of staying unset."""
    from indexer.freshness.worker import RepoWorkers
    from common.settings import FreshnessSettings
    from common.sources import RepoConfig

    workers = RepoWorkers(None, FreshnessSettings.from_env({}, repos=(RepoConfig("a", str(tmp_path)),)))
    slot = workers._slot("a")
    try:
        metrics.watch_webhook_queue(workers.pending)
        assert _samples(metrics.render()[0].decode())[("coderag_webhook_queue_depth", ())] == 0
        with slot.cond:
            slot.dirty = True  # a push queued, its run not started (the worker waits on this lock)
            assert _samples(metrics.render()[0].decode())[("coderag_webhook_queue_depth", ())] == 1
            slot.dirty = False
    finally:
        workers.stop()
        metrics.set_webhook_queue_depth(0)
