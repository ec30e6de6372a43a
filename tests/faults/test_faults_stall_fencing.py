"""A stalled run loses its repository and must never commit over the run that took it.

Run A stops just before its commit (the ``before_commit`` fault point) and is frozen
with SIGSTOP past its lock's TTL, as a frozen container or a swapping host would be.
Run B takes the lock over, indexes a newer commit and commits. A is then thawed and
reaches its commit: its lock fence (the heartbeat saw the takeover) or, failing that, the
compare-and-swap on the committed generation refuses it; A exits non-zero with one line,
and B's commit survives with all its chunks."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from common.errors import ExitCode
from helpers.gitrepo import commit_files, head_sha, make_git_repo

pytestmark = pytest.mark.weaviate

TTL = 3  # seconds: CODERAG_INDEX_LOCK_TTL_SECONDS for both runs


def _wait_for(path, proc, timeout=240):
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "run A never reached its commit"
        time.sleep(0.1)


def test_a_run_stalled_past_its_lock_never_commits_over_the_newer_run(settings_env, store, tmp_path):
    from common.settings import Settings
    from indexer import ChunkStore

    files = {f"pkg/m{i}.py": f"def old_{i}():\n    return {i}\n" for i in range(6)}
    repo = make_git_repo(tmp_path, files, name="stall")
    env = dict(settings_env, CODERAG_INDEX_LOCK_TTL_SECONDS=str(TTL))
    marker = tmp_path / "a-at-commit"
    a = subprocess.Popen([sys.executable, "-m", "bot.cli", "index", str(repo)], text=True,
                         env=dict(env, CODERAG_FAULT_AT="before_commit", CODERAG_FAULT_FILE=str(marker)),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(marker, a)
        a.send_signal(signal.SIGSTOP)  # frozen: no heartbeat
        time.sleep(TTL + 2)
        commit_files(repo, {"pkg/new.py": "def brand_new_feature():\n    return 42\n"}, message="newer")
        newer = head_sha(repo)
        b = subprocess.run([sys.executable, "-m", "bot.cli", "index", str(repo)], env=env, capture_output=True,
                           text=True, timeout=300)
        assert b.returncode == 0, b.stderr
        marker.unlink()  # let A go on from its fault point once thawed
        a.send_signal(signal.SIGCONT)
        out, err = a.communicate(timeout=300)
    finally:
        if a.poll() is None:
            a.send_signal(signal.SIGCONT)
            a.kill()
    assert a.returncode == ExitCode.STALE_RUN, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    # the fence (the heartbeat saw the takeover) or the compare-and-swap at the commit, whichever comes first
    assert last.startswith("coderag: error: stall: "), err
    assert ("lost its lock" in last and "commits nothing" in last) or \
        ("another index run committed" in last and "dropped" in last), err

    with ChunkStore.open(Settings.from_env()) as s:
        rec = s.sources.get("stall")
        assert rec.commit == newer
        assert rec.chunks == s.query.count("stall") >= 7
        names = {c.symbol for c in s.query.keyword("brand_new_feature", repos=["stall"], include_vector=False)}
        assert "brand_new_feature" in names


def test_the_compare_and_swap_alone_refuses_a_stale_commit(settings_env, store, local_embedder, tmp_path):
    """Even when the lock check is missed, a run whose source was committed by another run
    after it began cannot commit."""
    from common.settings import Settings
    from indexer import index_repository
    from indexer.models import SourceRecord
    from indexer.store.repo_lock import StaleRun

    repo = make_git_repo(tmp_path, {"a.py": "def a():\n    return 1\n"}, name="cas")
    settings = Settings.from_env()
    stale = store.runs.begin("cas", "full")  # began before the other run
    index_repository(repo, name="cas", settings=settings, store=store, embedder=local_embedder)
    newer = store.sources.get("cas")
    stale.verified = True  # straight to the commit: only the compare-and-swap stands in the way
    with pytest.raises(StaleRun, match="another index run committed"):
        store.runs.commit(stale, SourceRecord(name="cas", kind="git", commit="0" * 40, model="m"))
    assert store.sources.get("cas").run_gen == newer.run_gen
