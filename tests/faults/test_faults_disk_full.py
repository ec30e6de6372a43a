"""The disk fills up under the SQLite file while `index` saves the call graph: the run
stops before its switch, the previous version stays whole in Weaviate and in SQL, and
the next run (space freed) completes.

Two ways to fill it: a real size-limited folder (a 4 MiB tmpfs, mounted when this runs
as root and the kernel allows it, filled up with a filler file), and SQLite's own limit
(``PRAGMA max_page_count``: the same SQLITE_FULL "database or disk is full" error),
which runs everywhere."""
from __future__ import annotations

import os
import subprocess

import pytest

from helpers.embedders import HashEmbedder
from helpers.faults import commit_version, fill_disk, half_visible, inspect_repo, make_versioned_repo, marker

N_FILES, FUNCS = 12, 4


def _mount_tmpfs(path) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(path)], capture_output=True)
    return r.returncode == 0



def _graph_paths(sessions) -> set[str]:
    from sqlalchemy import select

    from indexer.graph.sql_models import CodeDefinition

    with sessions() as s:
        return set(s.execute(select(CodeDefinition.path).where(CodeDefinition.repo == "gen").distinct()).scalars())


@pytest.mark.parametrize("how", ["tmpfs", "max_page_count"])
def test_disk_full_under_sqlite_during_index(how, settings_env, store, tmp_path, monkeypatch):
    from sqlalchemy import event, text

    from common.db import open_database
    from common.settings import Settings
    from indexer import index_repository
    from indexer.store.sync_state import get_state
    from indexer.store.faults import set_fault_hook

    disk = tmp_path / "small-disk"
    mounted = _mount_tmpfs(disk) if how == "tmpfs" else (disk.mkdir() or False)
    if how == "tmpfs" and not mounted:
        pytest.skip("cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN): the max_page_count case covers it")
    try:
        monkeypatch.setenv("CODERAG_DATABASE_URL", f"sqlite:///{disk / 'coderag.db'}")
        settings = Settings.from_env()
        sessions = open_database(settings)
        repo = make_versioned_repo(tmp_path, N_FILES, FUNCS)
        first = index_repository(repo, name="gen", settings=settings, store=store, embedder=HashEmbedder(),
                                 sessions=sessions)
        v1_graph = _graph_paths(sessions)
        c2 = commit_version(repo, N_FILES, FUNCS * 4, 2)  # a bigger graph: the file must grow
        engine = sessions.kw["bind"]
        with engine.connect() as conn:
            pages = conn.execute(text("PRAGMA page_count")).scalar()

        def _limit(dbapi_conn, _record):  # every new connection: no room to grow
            dbapi_conn.execute(f"PRAGMA max_page_count = {pages}")

        def disk_full_now(point, **_info):  # the chunks are written; the graph is next
            if point != "before_verify":
                return
            set_fault_hook(None)
            if mounted:
                fill_disk(disk)
            else:
                event.listen(engine, "connect", _limit)
                engine.dispose()

        set_fault_hook(disk_full_now)
        try:
            with pytest.raises(Exception) as failure:
                index_repository(repo, name="gen", settings=settings, store=store, embedder=HashEmbedder(),
                                 sessions=sessions)
        finally:
            set_fault_hook(None)
        assert "full" in str(failure.value).lower(), failure.value
        seen = inspect_repo(store, "gen", {"v1": marker(1), "v2": marker(2)})
        state = get_state(sessions, "gen")
        print(f"\n[disk full, {'tmpfs 4 MiB' if mounted else 'max_page_count'}] {type(failure.value).__name__}; "
              f"reader sees: {seen}; SQL graph files: {len(_graph_paths(sessions))}, state commit {state.commit[:7]}")
        assert not half_visible(seen) and seen["commit"] == first.commit and seen["keyword_v2"] == 0
        assert seen["total_objects"] > seen["visible"]  # the run had written its chunks: unseen
        assert seen["missing_vectors"] == 0 and seen["vector_self_hit"]
        assert _graph_paths(sessions) == v1_graph and state.commit == first.commit  # SQL: still v1, whole

        if mounted:
            (disk / "filler").unlink()
        else:
            event.remove(engine, "connect", _limit)
            engine.dispose()
        second = index_repository(repo, name="gen", settings=settings, store=store, embedder=HashEmbedder(),
                                  sessions=sessions)
        final = inspect_repo(store, "gen", {"v1": marker(1), "v2": marker(2)})
        print(f"[space freed] next run: {second.chunks} chunks; reader sees: {final}")
        assert final["commit"] == c2 and not half_visible(final) and final["keyword_v1"] == 0
        assert final["total_objects"] == final["visible"] and final["missing_vectors"] == 0
        assert get_state(sessions, "gen").commit == c2 and "pkg/extra_v2.py" in _graph_paths(sessions)
        engine.dispose()
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(disk)], capture_output=True)
