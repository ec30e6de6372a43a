"""A real 3-node Weaviate cluster on one machine (tests/helpers/cluster.py): the chunk
collection with replication factor 3 keeps answering when one node is SIGKILLed, and the
node catches up on the writes it missed after it restarts.

Figures (queries answered during the loss, seconds to catch up) are printed; run with
``-s`` to see them (``make cluster-test`` does).
"""
from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest
import weaviate
from weaviate.classes.config import ConsistencyLevel
from weaviate.classes.query import Filter

from bot.retrieval.retriever import Retriever
from helpers.cluster import LocalCluster
from helpers.gitrepo import make_git_repo
from helpers.shop_repo import FILES
from common.errors import WeaviateUnavailable
from common.settings import Settings
from indexer import ChunkStore, index_repository
from indexer.store import schema

pytestmark = pytest.mark.weaviate

SHOP = {
    "shop/tax.py": FILES["pricing/tax.py"],
    "shop/retry.py": '''"""Outgoing HTTP calls."""
import time


def backoff_delay(attempt, base=0.5, cap=30.0):
    """Exponential backoff with a cap, in seconds, for retrying failed requests."""
    return min(cap, base * 2 ** attempt)


def fetch_with_retry(session, url, attempts=5):
    """GET url, retrying connection errors with exponential backoff."""
    for attempt in range(attempts):
        try:
            return session.get(url)
        except ConnectionError:
            time.sleep(backoff_delay(attempt))
    raise ConnectionError(url)
''',
    "server/health.go": FILES["server/health.go"],
    "docs/deploy.md": '''# Deploying

## Rolling restart

Restart one replica at a time; the load balancer drains it via the health probe.
''',
}
# Written while node3 is down.
LATE = {
    "ledger/reconcile.py": '''def reconcile_ledger_entries(entries):
    """Match bank statement lines with ledger entries by amount and date."""
    return {e.id: e for e in entries}
''',
}
QUESTIONS = [
    "where is the price with sales tax calculated?",
    "how is the retry backoff delay computed?",
    "which handler answers the load balancer health probe?",
    "how do we do a rolling restart?",
    "apply a percentage discount to a price",
]
CATCH_UP_TIMEOUT_S = 150


def _top(result, n: int = 3) -> list[tuple[str, str, str]]:
    return [(h.chunk.repo, h.chunk.path, h.chunk.symbol) for h in result.hits[:n]]


def _on_node(node, uuid: str) -> bool:
    """True when ``node`` itself holds object ``uuid`` (REST ``node_name``: no other replica
    is consulted)."""
    url = f"{node.url}/v1/objects/{schema.CHUNK_COLLECTION}/{uuid}?node_name={node.name}"
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status == 200
    except urllib.error.HTTPError:
        return False


def _index_retrying(path, settings, store, embedder, attempts: int = 5):
    """index_repository, retried: the first write after a node loss can hit a closing
    connection to the dead node (Weaviate answers 500 once, then routes around it)."""
    for attempt in range(attempts):
        try:
            return index_repository(path, settings=settings, store=store, embedder=embedder)
        except WeaviateUnavailable as exc:
            print(f"write attempt {attempt + 1} failed: {str(exc)[:120]}")
            time.sleep(2)
    raise AssertionError("writes kept failing with one node down")


def test_replicated_cluster_survives_a_node_loss_and_catches_up(tmp_path, weaviate_binary, local_embedder,
                                                                 monkeypatch):
    # Async replication compares replicas every 5 s to keep the test short.
    # (Weaviate clamps the frequency to its 5 s minimum; default 30 s.)
    extra_env = {"ASYNC_REPLICATION_FREQUENCY": "5s", "ASYNC_REPLICATION_FREQUENCY_WHILE_PROPAGATING": "5s"}
    t_start = time.monotonic()
    with LocalCluster(weaviate_binary, tmp_path / "cluster", extra_env=extra_env) as cluster:
        n1, n2, n3 = cluster.nodes
        print(f"\ncluster of 3 healthy in {time.monotonic() - t_start:.1f}s")
        for var in ("VOYAGE_API_KEY", "CODERAG_MAX_FILE_BYTES"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("WEAVIATE_URL", n1.url)
        monkeypatch.setenv("WEAVIATE_GRPC_PORT", str(n1.grpc))
        monkeypatch.setenv("CODERAG_REPLICATION_FACTOR", "3")
        monkeypatch.setenv("CODERAG_HOME", str(tmp_path / "home"))
        settings = Settings.from_env()
        assert settings.replication_factor == 3

        with ChunkStore.open(settings) as store:
            store.schema.reset()
            repl = store._cols.chunks.config.get().replication_config
            assert repl.factor == 3
            shop = make_git_repo(tmp_path, SHOP, name="shop")
            index_repository(shop, settings=settings, store=store, embedder=local_embedder)
            total_before = store.query.count()
            retriever = Retriever(store, local_embedder)
            before = {q: _top(retriever.search(q, top_k=5)) for q in QUESTIONS}
            for q, top in before.items():
                print(f"before  {q!r}: {top[0]}")

            cluster.kill(n3)
            answered, during, lat = 0, {}, []
            for _round in range(3):  # several rounds: the coordinator picks replicas per request
                for q in QUESTIONS:
                    t0 = time.perf_counter()
                    during[q] = _top(retriever.search(q, top_k=5))
                    lat.append(time.perf_counter() - t0)
                    answered += 1
            print(f"node3 SIGKILLed: {answered}/{3 * len(QUESTIONS)} queries answered; latencies (ms): "
                  + " ".join(f"{x * 1000:.0f}" for x in lat))
            assert during == before  # same top results with one node gone

            # Writes while node3 is down (QUORUM = 2 of 3 replicas).
            late = make_git_repo(tmp_path, LATE, name="ledger")
            _index_retrying(late, settings, store, local_embedder)
            late_count = store.query.count("ledger")
            late_ids = [str(o.uuid) for o in store._cols.chunks.query.fetch_objects(
                filters=Filter.by_property("repo").equal("ledger"), limit=100).objects]
            assert len(late_ids) == late_count
            assert not any(_on_node(n1, u) is False for u in late_ids)  # written on the survivors
            assert late_count > 0
            total_after = store.query.count()
            assert total_after == total_before + late_count

            t_restart = time.monotonic()
            cluster.start_node(n3)
            cluster.wait_healthy(3, via=n1)
            print(f"node3 restarted and healthy in {time.monotonic() - t_restart:.1f}s")

        # node3 directly: it must itself hold the objects written while it was down.
        t_catch = time.monotonic()
        missing = [u for u in late_ids if not _on_node(n3, u)]
        print(f"node3 lacks {len(missing)}/{len(late_ids)} late objects right after restart")
        while missing and time.monotonic() - t_catch < CATCH_UP_TIMEOUT_S:
            missing = [u for u in missing if not _on_node(n3, u)]
            if missing:
                time.sleep(1)
        print(f"node3 holds {len(late_ids) - len(missing)}/{len(late_ids)} late objects "
              f"{time.monotonic() - t_catch:.1f}s after restart")
        assert not missing, f"node3 did not catch up on {len(missing)} objects"
        c3 = weaviate.connect_to_custom(http_host="127.0.0.1", http_port=n3.http, http_secure=False,
                                        grpc_host="127.0.0.1", grpc_port=n3.grpc, grpc_secure=False)
        try:
            col = c3.collections.get(schema.CHUNK_COLLECTION).with_consistency_level(ConsistencyLevel.ONE)
            got = col.query.fetch_objects(filters=Filter.by_property("repo").equal("ledger"), limit=100)
            assert len(got.objects) == late_count
            via3 = ChunkStore(c3)
            via3.schema.ensure()
            via3._cols.chunks = col  # reads through node 3 at consistency ONE
            hit = Retriever(via3, local_embedder).search("match bank statement lines with ledger entries",
                                                         top_k=3)
            print(f"after restart via node3 (ONE): {_top(hit, 1)}")
            assert hit.hits[0].chunk.symbol == "reconcile_ledger_entries"
            after = {q: _top(Retriever(via3, local_embedder).search(q, top_k=5)) for q in QUESTIONS}
            # the same code is found; the ledger repository written since changes the corpus
            # statistics (BM25 IDF), which may swap near-equal hits within the top 3
            assert {q: set(v) for q, v in after.items()} == {q: set(v) for q, v in before.items()}
        finally:
            c3.close()
    print(f"cluster test total {time.monotonic() - t_start:.1f}s")
