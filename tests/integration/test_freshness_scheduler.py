"""The APScheduler scheduler: single-instance lock, TTL jobs firing, job providers."""
from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest

from helpers.fake_confluence import FakeConfluence

FIRED: list[str] = []


def record_fire(tag: str) -> None:
    """A module-level job function (stored by reference in the SQL job store)."""
    FIRED.append(tag)


@pytest.fixture
def sessions(tmp_path, monkeypatch):
    from common.db import open_database
    from common.settings import Settings

    monkeypatch.setenv("CODERAG_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CODERAG_DATABASE_URL", raising=False)
    return open_database(Settings.from_env())


def test_only_one_scheduler_per_database(sessions):
    from indexer.freshness.scheduler import FreshnessScheduler, SchedulerAlreadyRunning, SchedulerLock
    from indexer.store.sync_state import utcnow
    from indexer.store.sql_models import SchedulerLock as Row

    first = FreshnessScheduler(sessions, lock_ttl=3)
    first.start()
    try:
        second = FreshnessScheduler(sessions, lock_ttl=3)
        with pytest.raises(SchedulerAlreadyRunning, match="already running"):
            second.start()
        time.sleep(2.5)  # heartbeats keep the lock alive past a TTL's worth of... most of it
        with pytest.raises(SchedulerAlreadyRunning):
            FreshnessScheduler(sessions, lock_ttl=3).start()
    finally:
        first.shutdown()
    # released on shutdown: the next one starts
    third = FreshnessScheduler(sessions, lock_ttl=3)
    third.start()
    third.shutdown()
    # a crashed owner (stale heartbeat) is taken over
    with sessions.begin() as s:
        s.add(Row(name="scheduler", owner="dead-host:1:x", heartbeat_at=utcnow() - timedelta(seconds=120)))
    lock = SchedulerLock(sessions, ttl=60)
    lock.acquire()
    assert lock.heartbeat()
    lock.release()


def test_job_providers_add_jobs_with_stable_ids(sessions):
    from indexer.freshness.scheduler import FreshnessScheduler, next_runs
    from indexer.store.sync_state import utcnow

    def provider(sched):
        sched.add_job("test:fire", record_fire, seconds=3600, args=("p",), first_run=utcnow())

    FIRED.clear()
    sched = FreshnessScheduler(sessions)
    sched.on_start(provider)
    sched.start()
    try:
        deadline = time.time() + 10
        while not FIRED and time.time() < deadline:
            time.sleep(0.1)
        assert FIRED == ["p"]
        provider(sched)  # replace_existing: same id, still one job
        assert sched.job_ids().count("test:fire") == 1
        assert "test:fire" in next_runs(sessions.kw["bind"])
        # jobs are functions (stored by their import reference), never strings or closures
        for bad in ("test_freshness_scheduler:record_fire", lambda p: None, provider):
            with pytest.raises(TypeError, match="module-level function"):
                sched.add_job("test:bad", bad, seconds=3600)
        assert "test:bad" not in sched.job_ids()
    finally:
        sched.shutdown()


def test_confluence_ttl_job_fires(settings_env, store, local_embedder, monkeypatch):
    from common.db import open_database
    from common.settings import Settings, load
    from indexer.freshness.runtime import FreshnessRuntime
    from indexer.store.sync_state import get_state
    from indexer.freshness.status import freshness_status

    fake = FakeConfluence().start()
    fake.put_page("1", "OPS", "Runbook", "<h2>Restart</h2><p>Restart the api pods.</p>")
    monkeypatch.setenv("CODERAG_CONFLUENCE_URL", fake.url)
    monkeypatch.setenv("CODERAG_CONFLUENCE_PAT", "pat")
    monkeypatch.setenv("CODERAG_CONFLUENCE_SPACES", json.dumps([{"key": "OPS", "ttl_hours": 2 / 3600}]))  # 2 s
    settings = Settings.from_env()
    sessions = open_database(settings)
    rt = FreshnessRuntime.build(load().freshness, settings, sessions=sessions, embedder=local_embedder,
                                store=store)
    rt.start_scheduler()
    try:
        deadline = time.time() + 30
        while time.time() < deadline and not (get_state(sessions, "OPS") and get_state(sessions, "OPS").indexed_at):
            time.sleep(0.2)
        first = get_state(sessions, "OPS").indexed_at
        assert first is not None  # never indexed -> the job ran at once
        fake.put_page("1", "OPS", "Runbook", "<h2>Restart</h2><p>Restart the api pods twice.</p>", version=2)
        deadline = time.time() + 30
        while time.time() < deadline and get_state(sessions, "OPS").indexed_at == first:
            time.sleep(0.2)
        assert get_state(sessions, "OPS").indexed_at > first  # fired again after the 2 s TTL
        status = {s["name"]: s for s in freshness_status(sessions, store.sources.all())}
        assert status["OPS"]["next_run"] is not None and status["OPS"]["last_error"] is None
        assert status["OPS"]["version"] == 2
    finally:
        rt.stop()
        fake.stop()


def test_a_repository_lock_is_not_called_the_scheduler_lock(sessions, caplog):
    """The index lock of a repository shares the scheduler lock's table and code; its
    messages name the repository's index lock, never the scheduler."""
    from indexer.store.repo_lock import RepoIndexBusy, repo_index_lock
    from indexer.store.sql_lock import SchedulerLock
    from indexer.store.sql_models import SchedulerLock as Row
    from indexer.store.sync_state import utcnow

    with sessions.begin() as s:  # a crashed run's lock of repo svc
        s.add(Row(name="index:svc", owner="dead-host:1:x", heartbeat_at=utcnow() - timedelta(seconds=120)))
    with caplog.at_level("WARNING", logger="indexer.store.sql_lock"):
        with repo_index_lock(sessions, "svc", ttl_s=60):
            with pytest.raises(RepoIndexBusy) as busy:
                with repo_index_lock(sessions, "svc", wait_s=0, ttl_s=60):
                    pass
    taken = [r.getMessage() for r in caplog.records if "took over" in r.getMessage()]
    assert len(taken) == 1 and taken[0].startswith("took over the index lock of 'svc' from dead-host:1:x "), taken
    assert "the index lock of 'svc' is held by" in str(busy.value)
    for text in taken + [str(busy.value)]:
        assert "scheduler" not in text.lower(), text
    lock = SchedulerLock(sessions, ttl=60)  # the scheduler's own lock keeps its name
    lock.acquire()
    with pytest.raises(Exception, match="a scheduler is already running"):
        SchedulerLock(sessions, ttl=60).acquire()
    lock.release()
