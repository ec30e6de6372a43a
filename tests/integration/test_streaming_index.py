"""Streaming and searchable-early indexing on the one pipeline (real Git, real Weaviate, real SQLite,
the real MiniLM):

* streaming: the stages never hold more than the documented bound of chunks, however
  many the repository has;
* searchable early: a first index commits its chunks keyword-ready, so keyword search
  finds them *during* the run, before their vectors exist, while status and doctor say
  "vectors N% done" (a recorded state, not damage); at the end every chunk meant to have
  a vector has one in the vector index;
* a crash while the vectors fill in leaves the keyword-ready version searchable and
  recorded as pending; the next run completes it.
"""
from __future__ import annotations

import pytest
from weaviate.classes.query import Filter

from helpers.gitrepo import make_git_repo

N_FILES = 30


def _files() -> dict[str, str]:
    files = {"pkg/__init__.py": ""}
    for i in range(N_FILES):
        files[f"pkg/mod{i}.py"] = (f'def handler_{i}(request):\n    """Handle zebrafinch{i} requests."""\n'
                                   f"    return request.value + {i}\n")
    files["tests/test_mod.py"] = "def test_handler():\n    assert handler_1 is not None\n"
    return files


@pytest.fixture
def pipeline(settings_env, store, local_embedder):
    from common.db import open_database
    from common.settings import Settings
    from indexer.embedding_policy import TESTS_KEYWORD_ONLY
    from indexer.pipeline import IndexingPipeline

    settings = Settings.from_env()
    # Tiny batches so that a 32-file repository takes several batches in each phase.
    return IndexingPipeline(settings=settings, store=store, sessions=open_database(settings),
                            embedder=local_embedder, stream_batch=2, stream_depth=1,
                            policy=TESTS_KEYWORD_ONLY)


def _meant_ids(store, repo: str) -> list[str]:
    """Visible objects that should carry a vector (not keyword-only by the policy)."""
    flt = store.query.visible_filter([repo])
    objs = store._cols.chunks.query.fetch_objects(filters=flt, limit=1000, return_properties=["vector_state"]).objects
    return [str(o.uuid) for o in objs if o.properties.get("vector_state") != "none"]


def test_stages_hold_a_bounded_number_of_chunks(pipeline, tmp_path):
    from indexer.sources.repository import index_repository

    repo = make_git_repo(tmp_path, _files(), name="shop")
    pipeline.early_search = False
    res = index_repository(repo, settings=pipeline.settings, store=pipeline.store, pipeline=pipeline)
    # one chunk per file here: (2 * depth + 3) batches of 2, plus the one file being split
    bound = (2 * pipeline.stream_depth + 3) * pipeline.stream_batch + 1
    print(f"\n[stream] chunks {res.chunks}, most in flight {res.max_chunks_in_flight}, bound {bound}")
    assert res.chunks > bound  # the repository is larger than what the stages may hold
    assert 0 < res.max_chunks_in_flight <= bound
    assert res.vectors_pending == 0 and res.seconds_keyword_ready is None  # one phase
    assert res.keyword_only == 1 and res.embedded == res.chunks - 1


def test_first_index_is_keyword_searchable_before_its_vectors(pipeline, tmp_path):
    from indexer import check_index, index_status
    from indexer.read import vectors_percent
    from indexer.sources.repository import index_repository
    from indexer.store import versions
    from indexer.store.faults import set_fault_hook

    repo = make_git_repo(tmp_path, _files(), name="shop")
    seen: list[dict] = []

    def during_run(point, **info):
        if point not in ("keyword_ready", "vector_batch") or info.get("batch", 1) != 1:
            return
        store = pipeline.store
        hits = store.query.keyword("zebrafinch7", limit=3, repos=["shop"])
        rec = store.sources.get("shop")
        health = {h.name: h for h in check_index(store)}["shop"]
        status = {s["name"]: s for s in index_status(pipeline.settings)}["shop"]
        from sqlalchemy import func, select

        from indexer.graph.sql_models import CodeDefinition
        with pipeline.sessions() as s:
            defs = s.execute(select(func.count(CodeDefinition.id)).where(CodeDefinition.repo == "shop")).scalar()
        seen.append({"point": point, "defs": defs,
                     "hits": [h.path for h in hits], "vector": hits[0].vector if hits else None,
                     "pct": vectors_percent(rec), "status_pct": status["vectors_percent"],
                     "doctor_ok": health.ok, "doctor_pct": health.vectors_percent,
                     "pending": health.vectors_pending})

    set_fault_hook(during_run)
    try:
        res = index_repository(repo, settings=pipeline.settings, store=pipeline.store, pipeline=pipeline)
    finally:
        set_fault_hook(None)
    print(f"\n[early] {seen}\n[early] result: pending {res.vectors_pending}, keyword-ready after "
          f"{res.seconds_keyword_ready:.2f} s of {res.seconds_total:.2f} s")
    first, during = seen[0], seen[1]
    # At the keyword-ready commit: found by keyword, no vector yet, 0% done, doctor fine.
    assert first["point"] == "keyword_ready" and first["hits"][:1] == ["pkg/mod7.py"]
    assert not first["vector"] and first["pct"] == 0 and first["status_pct"] == 0
    assert first["doctor_ok"] and first["doctor_pct"] == 0 and first["pending"] == N_FILES
    # keyword search does not wait for the call graph: it is saved right after that commit
    assert first["defs"] == 0 and during["defs"] >= N_FILES
    # After the first batch of vectors: partly done.
    assert during["point"] == "vector_batch" and during["hits"][:1] == ["pkg/mod7.py"]
    assert 0 < during["status_pct"] < 100 and during["doctor_ok"]
    # At the end: every chunk meant to have a vector has one; the record is complete.
    rec = pipeline.store.sources.get("shop")
    assert rec.vectors_pending == 0 and vectors_percent(rec) is None and rec.keyword_only == 1
    meant = _meant_ids(pipeline.store, "shop")
    assert len(meant) == N_FILES  # the modules; the test file is keyword-only (__init__.py is empty)
    assert versions.missing_vectors(pipeline.store, meant) == []
    health = {h.name: h for h in check_index(pipeline.store)}["shop"]
    assert health.ok and health.vectors_pending == 0 and health.keyword_only == 1
    # and the vector half of hybrid search finds them
    qvec = pipeline.embedder.embed_query("handle zebrafinch7 requests")
    hits = pipeline.store.query.hybrid("zebrafinch7", qvec, alpha=1.0, limit=3, repos=["shop"])
    assert hits and hits[0].path == "pkg/mod7.py" and hits[0].vector


def test_crash_while_filling_vectors_keeps_keyword_version_and_next_run_completes(pipeline, tmp_path):
    from indexer import check_index
    from indexer.read import vectors_percent
    from indexer.sources.repository import index_repository
    from indexer.store import versions
    from indexer.store.faults import set_fault_hook

    repo = make_git_repo(tmp_path, _files(), name="shop")

    def crash(point, **info):
        if point == "vector_batch" and info["batch"] == 2:
            raise RuntimeError("killed while embedding")

    set_fault_hook(crash)
    try:
        with pytest.raises(RuntimeError, match="killed while embedding"):
            index_repository(repo, settings=pipeline.settings, store=pipeline.store, pipeline=pipeline)
    finally:
        set_fault_hook(None)
    store = pipeline.store
    rec = store.sources.get("shop")
    pct = vectors_percent(rec)
    assert rec.vectors_pending > 0 and pct is not None and 0 < pct < 100
    assert [h.path for h in store.query.keyword("zebrafinch3", limit=1, repos=["shop"])] == ["pkg/mod3.py"]
    health = {h.name: h for h in check_index(store)}["shop"]
    assert health.ok and health.vectors_percent == pct  # a recorded state, not damage
    # The sync state was not saved: a push would not diff from this commit.
    from indexer.store.sync_state import get_state
    state = get_state(pipeline.sessions, "shop")
    assert state is None or not state.commit

    again = index_repository(repo, settings=pipeline.settings, store=store, pipeline=pipeline)  # early again
    # the vectors the crashed run had filled are reused by content hash, the rest embedded
    assert again.reused_vectors == 2 * pipeline.stream_batch and again.vectors_pending == N_FILES - 4
    rec = store.sources.get("shop")
    assert rec.vectors_pending == 0
    assert versions.missing_vectors(store, _meant_ids(store, "shop")) == []
    assert store.query.count_where(Filter.by_property("repo").equal("shop")) == rec.chunks  # crashed gen cleaned
    assert {h.name: h for h in check_index(store)}["shop"].ok


def test_doctor_flags_pending_objects_the_record_calls_complete(pipeline, tmp_path):
    from indexer import check_index, repair_index
    from indexer.sources.repository import index_repository

    repo = make_git_repo(tmp_path, _files(), name="shop")
    index_repository(repo, settings=pipeline.settings, store=pipeline.store, pipeline=pipeline)
    store = pipeline.store
    # Damage: one object marked pending (and stripped of its vector) under a complete record.
    obj = store.query.keyword("zebrafinch5", limit=1, repos=["shop"])[0]
    props = dict(store._cols.chunks.query.fetch_object_by_id(obj.uuid).properties, vector_state="pending")
    store._cols.chunks.data.delete_by_id(obj.uuid)
    store._cols.chunks.data.insert(properties=props, uuid=obj.uuid)
    health = {h.name: h for h in check_index(store)}["shop"]
    assert not health.ok and health.vector_state_mismatch == 1
    after = {h.name: h for h in repair_index(store, pipeline.sessions,
                                             embedder_factory=lambda: pipeline.embedder)}["shop"]
    assert after.ok, after.problems
