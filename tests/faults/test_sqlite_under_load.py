"""The embedded default (SQLite) under concurrent load: `coderag index` of a repository
while another process searches the same index and database in a loop. The run's lock
heartbeat shares SQLite with the call-graph writes and the searches' query log; a
"database is locked" answer must never become a traceback or a lost lock."""
from __future__ import annotations

import subprocess
import sys
import time

from helpers.gitrepo import make_git_repo


def test_index_under_concurrent_searches_prints_no_traceback_and_keeps_its_lock(settings_env, store, tmp_path):
    files = {f"pkg/m{i:03d}.py": "".join(f"def f{i}_{k}(x):\n    return g{k}(x) + {k}\n\n" for k in range(25))
             for i in range(120)}
    repo = make_git_repo(tmp_path, files, name="loaded")
    # a short lock TTL: the heartbeat writes every second, while the graph and the searches write too
    env = dict(settings_env, CODERAG_INDEX_LOCK_TTL_SECONDS="3")
    seed = make_git_repo(tmp_path, {"s.py": "def seed():\n    return 1\n"}, name="seed")
    assert subprocess.run([sys.executable, "-m", "bot.cli", "index", str(seed)], env=env, capture_output=True,
                          timeout=600).returncode == 0  # the database and model exist before the race
    searcher = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys, time\n"
         "end = time.monotonic() + 600\n"
         "while time.monotonic() < end:\n"
         "    subprocess.run([sys.executable, '-m', 'bot.cli', 'ask', 'what does f3_4 return?', '--repo', 'seed'],"
         " capture_output=True)\n"],
        env=env)
    try:
        t0 = time.monotonic()
        run = subprocess.run([sys.executable, "-m", "bot.cli", "index", str(repo)], env=env, capture_output=True,
                             text=True, timeout=900)
        seconds = time.monotonic() - t0
    finally:
        searcher.kill()
        searcher.wait(timeout=30)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    assert "lost its lock" not in run.stderr and "took over" not in run.stderr, run.stderr
    assert seconds > 3, "the run ended before a heartbeat could meet the searches"
    status = subprocess.run([sys.executable, "-m", "bot.cli", "status", "--json"], env=env, capture_output=True,
                            text=True, timeout=300)
    assert '"name": "loaded"' in status.stdout, status.stdout
