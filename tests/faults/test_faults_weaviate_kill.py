"""SIGKILL of the real weaviate-server while ``index`` writes a new commit, at several
points; then: the previous version is whole (keyword and vector), nothing of the new
one is visible, and the next run repairs everything. Each case prints its counts."""
from __future__ import annotations

import pytest

from helpers.embedders import HashEmbedder
from helpers.faults import (KillableWeaviate, commit_version, half_visible, inspect_repo, make_versioned_repo,
                            marker)

N_FILES, FUNCS = 30, 5  # 30 headers + 150 functions = 180 chunks per version
BATCH = 40  # objects per write request in these tests: several batches per run
MARKERS = {"v1": marker(1), "v2": marker(2)}


@pytest.fixture(scope="module")
def weaviate(tmp_path_factory, weaviate_binary):
    w = KillableWeaviate(weaviate_binary, tmp_path_factory.mktemp("killable")).start()
    try:
        yield w
    finally:
        w.stop()


@pytest.fixture
def env(weaviate, monkeypatch, tmp_path):
    from conftest import _CODERAG_ENV

    for name in _CODERAG_ENV:
        monkeypatch.delenv(name, raising=False)
    for k, v in weaviate.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CODERAG_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("indexer.store.data.WRITE_BATCH_SIZE", BATCH)
    from common.db import open_database
    from common.settings import Settings
    from indexer import ChunkStore

    settings = Settings.from_env()
    store = ChunkStore.open(settings)
    store.schema.reset()
    store.close()
    return settings, open_database(settings)


def _index(repo, settings, sessions):
    from indexer import ChunkStore, index_repository

    store = ChunkStore.open(settings)
    try:
        return index_repository(repo, name="gen", settings=settings, store=store, embedder=HashEmbedder(),
                                sessions=sessions)
    finally:
        store.close()


def _seen(settings):
    from indexer import ChunkStore

    store = ChunkStore.open(settings)
    try:
        return inspect_repo(store, "gen", MARKERS)
    finally:
        store.close()


def _kill_mid_request(weaviate, nth: int = 3, delay_s: float = 0.02):
    """The ``nth`` insert request is sent while a timer SIGKILLs the server ``delay_s``
    later (inside the request)."""
    from indexer.store.data import DataNamespace

    original = DataNamespace.insert
    calls = {"n": 0}

    def insert(self, objs):
        calls["n"] += 1
        if calls["n"] == nth:
            weaviate.kill_after(delay_s)
        return original(self, objs)

    DataNamespace.insert = insert
    return lambda: setattr(DataNamespace, "insert", original)


def _kill_at(weaviate, point: str):
    from indexer.store.faults import set_fault_hook

    def hook(p, **info):
        if p == point:
            set_fault_hook(None)
            weaviate.kill()

    set_fault_hook(hook)
    return lambda: set_fault_hook(None)


@pytest.mark.parametrize("where", ["mid_batch", "before_commit", "before_cleanup"])
def test_sigkill_weaviate_during_index(where, weaviate, env, tmp_path, monkeypatch):
    settings, sessions = env
    repo = make_versioned_repo(tmp_path, N_FILES, FUNCS)
    first = _index(repo, settings, sessions)
    before = _seen(settings)
    assert before["visible"] == first.chunks and not half_visible(before)

    c2 = commit_version(repo, N_FILES, FUNCS, 2)
    undo = _kill_mid_request(weaviate) if where == "mid_batch" else _kill_at(weaviate, where)
    try:
        with pytest.raises(Exception):
            _index(repo, settings, sessions)
    finally:
        undo()
    seconds = weaviate.restart()
    after = _seen(settings)
    print(f"\n[{where}] killed, restarted in {seconds:.1f}s; reader sees: {after}")

    # Nothing half-visible: exactly one complete version. Before the commit point that is
    # the previous version, in full, by keyword and by vector.
    assert not half_visible(after), after
    expect_new = where == "before_cleanup"  # the record was committed just before the kill
    want, other = ("v2", "v1") if expect_new else ("v1", "v2")
    assert after["commit"] == (c2 if expect_new else first.commit)
    assert after[f"keyword_{other}"] == 0, after
    assert after[f"keyword_{want}"] > 0 and after[f"keyword_{want}_commits"] == [after["commit"]]
    if expect_new:
        # Observed with Weaviate 1.39: a SIGKILL right after acknowledged writes can drop the
        # vector-index entries of the last ones (the objects stay). The version stays whole
        # by keyword; the next run (or `doctor --repair`) puts the vectors back.
        print(f"[{where}] committed version objects without vector after the kill: {after['missing_vectors']}")
    else:
        assert after["missing_vectors"] == 0 and after["vector_self_hit"], after
        assert after["visible"] == before["visible"] == first.chunks

    # The next run repairs: new version whole, no orphan objects, no missing vectors.
    second = _index(repo, settings, sessions)
    final = _seen(settings)
    print(f"[{where}] next run: {second.chunks} chunks in {second.seconds_total:.1f}s; reader sees: {final}")
    assert final["commit"] == c2 and not half_visible(final)
    assert final["visible"] == second.chunks == final["total_objects"]  # nothing left behind
    assert final["keyword_v1"] == 0 and final["keyword_v2"] > 0
    assert final["missing_vectors"] == 0 and final["vector_self_hit"]

    from indexer import ChunkStore, check_index

    store = ChunkStore.open(settings)
    try:
        (health,) = check_index(store, sessions)
    finally:
        store.close()
    print(f"[{where}] doctor after the next run: {health.to_dict()}")
    assert health.ok, health.problems
