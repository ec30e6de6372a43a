"""A ``coderag worker`` whose PostgreSQL goes away: stopped, then started again on the same
port. The worker must not end (it ended with status 0 once procrastinate's listener lost
its connection, and no supervisor restarts a process that exits 0): it tries the database
again with backoff, one log line per attempt, and runs the next job once it is back."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time

from helpers.fake_voyage import start_fake_voyage
from helpers.gitrepo import commit_files, head_sha, make_git_repo
from helpers.postgres import private_server
from helpers.processes import stop_process


def _svc_env(settings_env: dict, pg_url: str, voyage_url: str, up, **extra: str) -> dict:
    """The environment of a queue with one repository ``svc`` (at ``up``), embedding through
    the fake Voyage endpoint at ``voyage_url``; ``extra`` adds or overrides variables."""
    return dict(settings_env, CODERAG_DATABASE_URL=pg_url, CODERAG_INDEX_QUEUE="procrastinate",
                VOYAGE_API_KEY="pa-test", VOYAGE_BASE_URL=voyage_url, CODERAG_EMBEDDING_RUNTIME="auto",
                CODERAG_METRICS_PORT="0", CODERAG_REPOS=json.dumps([{"name": "svc", "url": str(up), "branch": "main"}]),
                **extra)


def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def _indexed_commit(url: str, repo: str) -> str | None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as c:
            if not c.execute(text("SELECT to_regclass('index_state') IS NOT NULL")).scalar():
                return None
            return c.execute(text('SELECT "commit" FROM index_state WHERE name = :n'), {"n": repo}).scalar()
    except Exception:  # noqa: BLE001 - the server is restarting
        return None
    finally:
        engine.dispose()


def _wait(what: str, done, worker: subprocess.Popen, log_path, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert worker.poll() is None, f"the worker ended (status {worker.returncode}) waiting for {what}:\n" \
                                      + log_path.read_text()[-4000:]
        assert time.monotonic() < deadline, f"{what}: not within {seconds:g} s\n" + log_path.read_text()[-4000:]
        time.sleep(0.5)


def test_a_worker_keeps_working_after_its_postgresql_restarts(settings_env, store, tmp_path):
    fake = start_fake_voyage()
    up = make_git_repo(tmp_path / "up", {"a.py": "def a():\n    return 1\n"}, name="svc")
    log_path = tmp_path / "worker.log"
    try:
        with private_server() as pg:
            env = _svc_env(settings_env, pg.url, fake.base_url, up)
            queued = _cli(env, "sync", "repo", "svc")
            assert queued.returncode == 0, queued.stderr
            with open(log_path, "w") as log:
                worker = subprocess.Popen([sys.executable, "-m", "bot.cli", "worker", "--name", "w0",
                                           "--heartbeat", "1", "--stalled-after", "10"],
                                          env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                _wait("the first index", lambda: _indexed_commit(pg.url, "svc") == head_sha(up), worker, log_path)
                pg.stop()
                _wait("a failed attempt to reach the stopped database",
                      lambda: "database still unreachable (attempt 1" in log_path.read_text(), worker, log_path, 120)
                pg.start()
                new_head = commit_files(up, {"b.py": "def b():\n    return 2\n"})
                deadline = time.monotonic() + 120
                while (again := _cli(env, "sync", "repo", "svc")).returncode != 0:  # the server is starting
                    assert time.monotonic() < deadline, again.stderr
                    time.sleep(1)
                _wait("the run queued after the restart", lambda: _indexed_commit(pg.url, "svc") == new_head,
                      worker, log_path)
            finally:
                stop_process(worker, timeout=120)
    finally:
        fake.close()
    text = log_path.read_text()
    assert "the worker lost its database" in text and "database reachable again" in text, text[-4000:]
    attempts = [x for x in text.splitlines() if "index queue: database still unreachable" in x]
    assert attempts and all(len(x) < 600 for x in attempts), attempts  # one line each


def test_a_frozen_postgresql_never_holds_a_metrics_scrape():
    """A PostgreSQL that accepts connections and never answers (its host frozen: here its
    server process stopped with SIGSTOP) held every /metrics scrape of a worker for about
    20 s (two gauges, each a 5 s connect and a 5 s reachability check). The queue is read
    once per scrape with about 2 s of timeouts, and reported unavailable."""
    import os

    from bot import metrics
    from common.settings import FreshnessSettings, Settings
    from indexer import queue_status_reader

    with private_server() as pg:
        read = queue_status_reader(FreshnessSettings.from_env({}, index_queue="procrastinate"),
                                   Settings.from_env({}, database_url=pg.url))
        metrics.watch_index_jobs(read)  # as `coderag worker` wires its /metrics
        metrics.watch_webhook_queue(lambda: read()["todo"])
        try:
            body = metrics.render()[0].decode()
            assert "coderag_index_queue_available 1.0" in body and "coderag_webhook_queue_depth 0.0" in body, body
            time.sleep(1.5)  # past the reuse of one read by the gauges of one scrape
            pid = pg.postmaster_pid()
            os.kill(pid, signal.SIGSTOP)
            try:
                started = time.monotonic()
                body = metrics.render()[0].decode()
                took = time.monotonic() - started
            finally:
                os.kill(pid, signal.SIGCONT)
            assert took < 10, f"a scrape waited {took:.1f} s for a frozen database"
            assert "coderag_index_queue_available 0.0" in body and "coderag_webhook_queue_depth NaN" in body, body
            assert "coderag_queries_total" in body  # the other metrics are served as usual
            deadline = time.monotonic() + 60  # the database answers again: so do the scrapes
            while "coderag_index_queue_available 1.0" not in metrics.render()[0].decode():
                assert time.monotonic() < deadline, "the queue never read as available again"
                time.sleep(0.5)
        finally:
            metrics._INDEX_JOBS.counts = None
            metrics.set_webhook_queue_depth(0)


def _queue_json(env: dict) -> dict | None:
    out = _cli(env, "status", "--json")
    return json.loads(out.stdout)["queue"] if out.returncode == 0 else None


def test_an_outage_longer_than_the_stalled_threshold_runs_the_job_in_hand_once(settings_env, store, tmp_path):
    """PostgreSQL down for longer than --stalled-after while a job runs: the run lives on
    (its process never died), but its worker's heartbeats lapsed, so the stalled-job check
    queued the job again and a second worker repeated the whole run after the first ended.
    The run keeps a heartbeat of its own: once the database is back it is not queued again
    (or, queued in the instant before its first beat, the copy finds it served and ends as
    a no-op); meanwhile `coderag status` counts it as running, and neither worker logs an
    asyncio "Task exception was never retrieved"."""
    fake = start_fake_voyage()
    fake.latency = 30.0  # the one embedding request is in flight through the whole outage
    up = make_git_repo(tmp_path / "up", {"a.py": "def a():\n    return 1\n"}, name="svc")
    logs = [tmp_path / "w0.log", tmp_path / "w1.log"]
    workers: list[subprocess.Popen] = []
    seen: list[dict] = []
    try:
        with private_server() as pg:
            env = _svc_env(settings_env, pg.url, fake.base_url, up, CODERAG_INDEX_LOCK_TTL_SECONDS="5",
                           CODERAG_LOG_LEVEL="INFO")

            def start(i: int) -> subprocess.Popen:
                with open(logs[i], "w") as log:
                    workers.append(subprocess.Popen([sys.executable, "-m", "bot.cli", "worker", "--name", f"w{i}",
                                                     "--heartbeat", "1", "--stalled-after", "3", "--keep-jobs"],
                                                    env=env, stdout=log, stderr=subprocess.STDOUT))
                return workers[-1]

            assert _cli(env, "sync", "repo", "svc").returncode == 0
            w0 = start(0)
            _wait("the embedding request of the run", lambda: fake.embed_requests, w0, logs[0], 300)
            pg.stop()
            time.sleep(5)  # an outage past the stalled threshold (3 s), shorter than the run
            pg.start()
            w1 = start(1)  # a second worker, free to take a job queued again
            while _indexed_commit(pg.url, "svc") != head_sha(up):  # the first run still embedding
                q = _queue_json(env)
                if q is not None and _indexed_commit(pg.url, "svc") != head_sha(up):
                    seen.append(q)
                assert w0.poll() is None and w1.poll() is None, logs[0].read_text()[-3000:]
                time.sleep(0.5)
            _wait("an empty queue", lambda: (_queue_json(env) or {}).get("waiting", 1) == 0
                  and _queue_json(env)["running"] == 0, w1, logs[1], 120)
            time.sleep(4)  # past another stalled threshold and a stalled-job check: nothing comes back
            assert _queue_json(env) == {"waiting": 0, "running": 0, "failed": 0}
    finally:
        for w in workers:
            stop_process(w, timeout=60)
        fake.close()
    text = logs[0].read_text() + logs[1].read_text()
    # one run did the work; any other start of the job (a copy queued in the instant before
    # the run's first beat after the outage) ended as a no-op
    starts = [x for x in text.splitlines() if "Starting job coderag:index_repo" in x]
    noops = [x for x in text.splitlines() if "was already done by an earlier run" in x]
    done = [x for x in text.splitlines()
            if re.search(r"indexer\.sources\.repository: svc: (full|incremental) \w*\.\.[0-9a-f]+ in ", x)]
    assert len(done) == 1 and len(starts) == 1 + len(noops), "the job ran more than once:\n" + text[-6000:]
    assert "Task exception was never retrieved" not in text, text[-4000:]
    assert seen and all(q["running"] == 1 for q in seen), seen


def test_status_and_sync_against_a_frozen_postgresql_end_in_one_line(settings_env, store, tmp_path):
    """A PostgreSQL that accepts connections and never answers (its postmaster stopped
    with SIGSTOP): `coderag status` and `coderag sync repo` hung for ever. They give up
    after their connect timeout: one error line, the database's exit status."""
    import os

    from common.errors import ExitCode

    with private_server() as pg:
        env = dict(settings_env, CODERAG_DATABASE_URL=pg.url, CODERAG_INDEX_QUEUE="procrastinate",
                   CODERAG_REPOS=json.dumps([{"name": "svc", "url": str(tmp_path / "svc"), "branch": "main"}]))
        assert _cli(env, "sync", "repo", "svc").returncode == 0  # migrated, queue tables made
        pid = pg.postmaster_pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            runs = {args: subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True,
                                         text=True, timeout=120)  # a hang fails here
                    for args in (("status",), ("sync", "repo", "svc"), ("sync", "retry"))}
        finally:
            os.kill(pid, signal.SIGCONT)
    for args, proc in runs.items():
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == ExitCode.DATABASE_ERROR and len(lines) == 1, (args, proc.returncode, proc.stderr)
        assert lines[0].startswith("coderag: error: ") and "Traceback" not in proc.stderr, (args, proc.stderr)


def test_a_worker_started_while_postgresql_is_down_waits_for_it(settings_env, store, tmp_path):
    """`coderag worker` started before its PostgreSQL (a host booting, a restart) exited 6
    at once. It tries again with the backoff of a worker that lost its database, one log
    line per attempt, starts once the database answers, and still stops on SIGTERM."""
    fake = start_fake_voyage()
    up = make_git_repo(tmp_path / "up", {"a.py": "def a():\n    return 1\n"}, name="svc")
    log_path = tmp_path / "worker.log"
    try:
        with private_server() as pg:
            env = _svc_env(settings_env, pg.url, fake.base_url, up)
            assert _cli(env, "sync", "repo", "svc").returncode == 0
            pg.stop()
            with open(log_path, "w") as log:
                worker = subprocess.Popen([sys.executable, "-m", "bot.cli", "worker", "--heartbeat", "1",
                                           "--stalled-after", "10"], env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                _wait("two attempts", lambda: "does not answer yet (attempt 2" in log_path.read_text(), worker,
                      log_path, 120)
                pg.start()
                _wait("the queued run", lambda: _indexed_commit(pg.url, "svc") == head_sha(up), worker, log_path)
            finally:
                code = stop_process(worker, timeout=120)
    finally:
        fake.close()
    text = log_path.read_text()
    assert code == 143, (code, text[-3000:])
    attempts = [x for x in text.splitlines() if "index queue: the database does not answer yet" in x]
    assert len(attempts) >= 2 and all(len(x) < 600 for x in attempts), text[-3000:]
    assert "the database answers" in text, text[-3000:]


def test_serve_in_the_indexer_role_stops_cleanly_while_its_postgresql_is_down(settings_env, store, tmp_path):
    """SIGTERM to `coderag serve` (indexer role) while PostgreSQL was down printed a raw
    traceback chain (SystemExit: 143, then the scheduler lock's release failing on the
    database): it must exit 143 with one timestamped line per record and no traceback."""
    from indexer.store.weaviate_server import free_ports

    any_line = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00 (DEBUG|INFO|WARNING|ERROR|CRITICAL) "
                          r"[\w.-]+: ")
    fake = start_fake_voyage()
    up = make_git_repo(tmp_path / "up", {"a.py": "def a():\n    return 1\n"}, name="svc")
    log_path = tmp_path / "serve.log"
    try:
        with private_server() as pg:
            env = _svc_env(settings_env, pg.url, fake.base_url, up, CODERAG_ROLE="indexer", CODERAG_LOG_LEVEL="INFO")
            with open(log_path, "w") as log:
                proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--port", str(free_ports(1)[0])],
                                        env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                _wait("serve's start-up", lambda: "Application startup complete" in log_path.read_text(), proc,
                      log_path, 300)
                pg.stop()
                time.sleep(2)  # the scheduler's next look at its job store meets the stopped server
                code = stop_process(proc, sig=signal.SIGTERM, timeout=120)
            finally:
                if proc.poll() is None:
                    stop_process(proc, sig=signal.SIGKILL, timeout=30)
    finally:
        fake.close()
    text = log_path.read_text()
    lines = [x for x in text.splitlines() if x.strip() and not x.startswith("coderag serve (indexer)")]
    assert code == 143, (code, text[-3000:])
    assert "Traceback" not in text, text[-3000:]
    bad = [x for x in lines if not any_line.match(x)]
    assert not bad, "\n".join(bad[:20])
