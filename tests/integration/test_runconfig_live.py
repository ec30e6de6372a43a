"""The freshness runtime of a running process reads its sources from the run-time
configuration (the database the admin page changes) when it needs them: the scheduler
gives a repository added on the page its safety re-fetch job, which syncs it, and takes
the job away when the repository is removed; the jobs already there keep their next run.
Real SQLite, the session's real Weaviate, a real Git repository, the real embedder."""
from __future__ import annotations

import time

from helpers.gitrepo import head_sha, make_git_repo
from helpers.sample_repo import PY


def _until(predicate, timeout: float = 120.0, what: str = ""):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out: {what}"
        time.sleep(0.2)


def test_the_scheduler_syncs_a_repository_added_on_the_page_and_forgets_a_removed_one(
        settings_env, store, local_embedder, tmp_path):
    from bot.runconfig.live import LiveFreshness
    from bot.runconfig.store import RunConfig, SourceEntry
    from common.db import open_database
    from common.settings import Settings, load
    from indexer.freshness.runtime import FreshnessRuntime
    from indexer.store.sync_state import get_state

    shop = make_git_repo(tmp_path, {"pricing/tax.py": PY}, name="shop")
    settings = Settings.from_env()
    sessions = open_database(settings)
    config = RunConfig(sessions)
    live = LiveFreshness(config, load().freshness)  # nothing in the environment
    runtime = FreshnessRuntime.build(live, settings, sessions=sessions, embedder=local_embedder, store=store)
    try:
        scheduler = runtime.start_scheduler(recheck_seconds=1)
        assert "sources:recheck" in scheduler.job_ids()
        assert not [j for j in scheduler.job_ids() if j.startswith("repo:")]

        config.add_source(SourceEntry(name="shop", url=str(shop)), actor="ada")  # as the admin page does
        _until(lambda: "repo:shop" in scheduler.job_ids(), what="the job of the repository added on the page")
        first = scheduler.scheduler.get_job("repo:shop").next_run_time
        st = _until(lambda: (s := get_state(sessions, "shop")) is not None and s.indexed_at is not None and s,
                    what="the scheduled sync of the added repository")
        assert st.commit == head_sha(shop) and not st.last_error
        # later rechecks leave the job as it is: its next run is a safety period (60 min) after
        # the first, not pushed to "in 5 s" again by each recheck
        time.sleep(2.5)
        assert (scheduler.scheduler.get_job("repo:shop").next_run_time - first).total_seconds() > 50 * 60

        config.remove_source("shop", actor="ada")
        _until(lambda: "repo:shop" not in scheduler.job_ids(), what="the job of the removed repository to go")
    finally:
        runtime.stop()
