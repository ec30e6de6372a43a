"""Index jobs on procrastinate: three real ``coderag worker`` processes, one real PostgreSQL,
one real Weaviate, 30 repositories and 50 pushes, one worker SIGKILLed mid-job.

Embeddings go to a local Voyage stand-in over HTTP (real ``voyageai`` client), so the jobs
are small and the test is about the queue, not the model."""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict

import pytest

from helpers.fake_voyage import start_fake_voyage
from helpers.gitrepo import commit_files, head_sha, make_git_repo
from helpers.postgres import fresh_database
from helpers.processes import stop_process

REPOS = 30
PUSHES = 50
#: A worker's log line: ISO 8601 time (UTC, milliseconds), level, logger, message.
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00 (DEBUG|INFO|WARNING|ERROR|CRITICAL) "
                      r"[\w.-]+: ")


def _worker(env: dict, name: str, log) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bot.cli", "worker", "--name", name, "--stalled-after", "10",
                             "--heartbeat", "1", "--keep-jobs"], env=env, stdout=log, stderr=subprocess.STDOUT)


def _jobs(sql, query: str, **params) -> list[dict]:
    with sql.connect() as c:
        return [dict(r._mapping) for r in c.execute(__import__("sqlalchemy").text(query), params)]


def _fetch_one(app):
    """The next index job, fetched as a freshly registered worker would (procrastinate Job or None)."""
    import asyncio

    from indexer.freshness import queue as q

    async def fetch():
        async with app.open_async():
            worker = await app.job_manager.register_worker()
            return await app.job_manager.fetch_job(queues=[q.QUEUE], worker_id=worker)

    return asyncio.run(fetch())


@pytest.fixture
def queue_env(settings_env, store, postgres_server_url, tmp_path):
    fake = start_fake_voyage()
    with fresh_database(postgres_server_url) as url:
        env = dict(settings_env, CODERAG_DATABASE_URL=url, CODERAG_INDEX_QUEUE="procrastinate",
                   VOYAGE_API_KEY="pa-test", VOYAGE_BASE_URL=fake.base_url, CODERAG_INDEX_LOCK_TTL_SECONDS="5",
                   CODERAG_EMBEDDING_RUNTIME="auto", CODERAG_METRICS_PORT="0")
        yield env, url, tmp_path
    fake.close()


def test_three_workers_index_every_push_and_survive_a_killed_worker(queue_env):
    from sqlalchemy import create_engine

    from indexer.freshness import queue as q

    env, url, tmp_path = queue_env
    upstreams = {f"r{i:02d}": make_git_repo(tmp_path / "up", {f"pkg{i}/m.py": f"def f{i}():\n    return {i}\n"},
                                            name=f"r{i:02d}") for i in range(REPOS)}
    env["CODERAG_REPOS"] = json.dumps([{"name": n, "url": str(p), "branch": "main"} for n, p in upstreams.items()])
    logs = [open(tmp_path / f"w{i}.log", "w") for i in range(3)]
    app = q.make_app(url)
    sql = create_engine(url)
    workers: dict[int, subprocess.Popen] = {}  # procrastinate worker id -> process
    killed = killed_job = None
    try:
        for i in range(3):  # one at a time, to learn each process's worker id
            proc = _worker(env, f"w{i}", logs[i])
            deadline = time.monotonic() + 120
            while True:
                ids = set()
                if _jobs(sql, "SELECT 1 FROM pg_tables WHERE tablename = 'procrastinate_workers'"):
                    ids = {r["id"] for r in _jobs(sql, "SELECT id FROM procrastinate_workers")} - set(workers)
                if ids:
                    workers[ids.pop()] = proc
                    break
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / f"w{i}.log").read_text()
                time.sleep(0.2)
        with app.open():
            for name in upstreams:
                q.enqueue_repo(app, name)
            rng = random.Random(7)
            for k in range(PUSHES):
                name = rng.choice(sorted(upstreams))
                commit_files(upstreams[name], {f"pkg{name}/p{k}.py": f"def push{k}():\n    return {k}\n"})
                q.enqueue_repo(app, name)  # what the push webhook does
                if k == 20:  # one worker dies mid-job
                    deadline = time.monotonic() + 120
                    while killed is None:
                        running = _jobs(sql, "SELECT id, worker_id, args->>'repo' AS repo FROM procrastinate_jobs "
                                             "WHERE status = 'doing' AND queue_name = :q "
                                             "AND task_name = 'coderag:index_repo'", q=q.QUEUE)
                        busy = [r for r in running if r["worker_id"] in workers]
                        if busy:
                            killed, killed_job = busy[0]["worker_id"], busy[0]["id"]
                            workers[killed].send_signal(signal.SIGKILL)
                            workers[killed].wait(timeout=30)
                            # a push to that repository right after: its run waits behind the dead
                            # worker's job (same lock), so that job must not stay "doing"
                            victim = busy[0]["repo"]
                            commit_files(upstreams[victim], {f"pkg{victim}/late.py": "def late():\n    return 1\n"})
                            q.enqueue_repo(app, victim)
                        else:
                            assert time.monotonic() < deadline, "no job ever ran"
                            time.sleep(0.05)
                time.sleep(rng.random() * 0.1)
            deadline = time.monotonic() + 600
            while True:
                counts = q.queue_counts(app)
                if counts.todo == counts.doing == 0:
                    break
                assert time.monotonic() < deadline, counts.to_dict()
                time.sleep(1)
        assert counts.failed == 0, counts.to_dict()
        # every repository is indexed at its last pushed commit: no push lost
        states = {r["name"]: r["commit"] for r in _jobs(sql, "SELECT name, \"commit\" FROM index_state")}
        assert states == {n: head_sha(p) for n, p in upstreams.items()}
        # no two runs of one repository overlapped (a run: from 'started' to the job's next event)
        events = _jobs(sql, "SELECT j.id, j.lock, e.type::text AS type, e.at FROM procrastinate_events e "
                            "JOIN procrastinate_jobs j ON j.id = e.job_id WHERE j.queue_name = :q "
                            "AND j.task_name = 'coderag:index_repo' ORDER BY e.at, e.id", q=q.QUEUE)
        runs, open_runs = defaultdict(list), {}
        for e in events:
            if e["type"] == "started":
                open_runs[e["id"]] = e["at"]
            elif e["id"] in open_runs:
                runs[e["lock"]].append((open_runs.pop(e["id"]), e["at"]))
        assert not open_runs
        for lock, spans in runs.items():
            spans.sort()
            assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), (lock, spans)
        # the killed worker's job did not stay stuck: ended (the run of its repository already
        # waiting does its work), or, when its run had just succeeded as the worker was killed
        # (its end not yet written), finished as succeeded (coderag_job_runs)
        assert killed is not None
        (final,) = _jobs(sql, "SELECT status::text AS status FROM procrastinate_jobs WHERE id = :i", i=killed_job)
        assert final["status"] in ("aborted", "succeeded"), final
    finally:
        for proc in workers.values():
            stop_process(proc, timeout=60)
        for f in logs:
            f.close()
        sql.dispose()


def test_queued_sync_status_failed_job_and_retry(queue_env):
    """`coderag sync` only queues; `coderag status` shows the queue; a job that fails keeps
    its error (secrets masked) and `coderag sync retry` queues it again. The retries wait
    CODERAG_QUEUE_RETRY_SECONDS, doubling (small here: the default 2 s made this test wait
    a minute of backoff)."""
    from sqlalchemy import create_engine
    from sqlalchemy import text as sql

    from common.errors import ExitCode

    env, url, tmp_path = queue_env
    env["CODERAG_QUEUE_RETRY_SECONDS"] = "0.1"
    good = make_git_repo(tmp_path / "up", {"a.py": "def a():\n    return 1\n"}, name="good")
    env["CODERAG_REPOS"] = json.dumps([
        {"name": "good", "url": str(good), "branch": "main"},
        {"name": "gone", "url": "https://bob:hunter2secret@git.invalid/x.git", "branch": "main"}])

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True, text=True,
                              timeout=300)

    first, again = cli("sync", "repo", "good"), cli("sync", "repo", "good")
    assert first.returncode == 0 and "queued as job" in first.stdout, first.stderr
    assert "already waiting" in again.stdout  # the queueing lock: one waiting run per repo
    assert cli("sync", "repo", "gone").returncode == 0
    status = cli("status")
    assert "Index queue: 2 waiting, 0 running, 0 failed" in status.stdout, status.stdout + status.stderr
    # the first runs are queued: each source says so, not "nothing indexed"
    assert "Nothing indexed yet" not in status.stdout, status.stdout
    for name in ("good", "gone"):
        line = next(x for x in status.stdout.splitlines() if x.startswith(f"{name}:"))
        assert "indexed never" in line and "jobs: 1 waiting, 0 running, 0 failed" in line, line
    queued = json.loads(cli("status", "--json").stdout)
    assert queued["queue"] == {"waiting": 2, "running": 0, "failed": 0}, queued
    assert {s["name"]: s["queue"]["todo"] for s in queued["sources"]} == {"good": 1, "gone": 1}
    with open(tmp_path / "w.log", "w") as log:
        worker = _worker(env, "w0", log)
        try:
            deadline = time.monotonic() + 300
            while True:
                data = {s["name"]: s for s in json.loads(cli("status", "--json").stdout)["sources"]}
                if ((data.get("good") or {}).get("commit") == head_sha(good)
                        and "Index queue: 0 waiting, 0 running, 1 failed" in cli("status").stdout):
                    break
                assert worker.poll() is None and time.monotonic() < deadline, (tmp_path / "w.log").read_text()
                time.sleep(1)
        finally:
            stop_process(worker, timeout=60)
    text = cli("status").stdout
    assert "`coderag sync retry` queues them again" in text
    line = next(x for x in text.splitlines() if x.startswith("gone:"))
    assert "jobs: 0 waiting, 0 running, 1 failed" in line and "last error:" in line, line
    assert "hunter2secret" not in text  # the failed job's error is kept with the password masked
    assert json.loads(cli("status", "--json").stdout)["queue"] == {"waiting": 0, "running": 0, "failed": 1}
    # the worker's log: one line per failed attempt (the fetch is retried, then fails), no traceback
    worker_log = (tmp_path / "w.log").read_text()
    assert "Traceback" not in worker_log and "hunter2secret" not in worker_log, worker_log
    failures = [x for x in worker_log.splitlines() if "coderag:index_repo" in x and "ended with status: Error" in x]
    assert failures and all("MirrorError: git " in x for x in failures), worker_log
    levels = [LOG_LINE.match(x).group(1) for x in failures]
    assert levels[-1] == "ERROR" and all(v == "WARNING" for v in levels[:-1]), failures
    assert len(failures) == 6, failures  # transient: retried 5 times (RETRY), then failed
    # each retry was scheduled the configured wait after its failure: 0.1 s, doubling
    engine = create_engine(url)
    try:
        with engine.connect() as c:
            events = c.execute(sql("SELECT e.type::text, e.at FROM procrastinate_events e JOIN procrastinate_jobs j "
                                   "ON j.id = e.job_id WHERE j.args->>'repo' = 'gone' ORDER BY e.id")).all()
    finally:
        engine.dispose()
    waits = []  # a retry writes two events at once: deferred_for_retry (now) and scheduled (its time)
    for a, b in zip(events, events[1:]):
        pair = {a.type: a.at, b.type: b.at}
        if set(pair) == {"deferred_for_retry", "scheduled"}:
            waits.append((pair["scheduled"] - pair["deferred_for_retry"]).total_seconds())
    assert len(waits) == 5 and all(abs(w - 0.1 * 2 ** i) < 0.3 for i, w in enumerate(waits)), (waits, events)
    # a name that is neither configured nor queued is an error, not "no failed job"
    typo = cli("sync", "retry", "gonne")
    assert typo.returncode == ExitCode.USAGE and typo.stderr.count("\n") == 1, typo
    assert "no repo or space named 'gonne'" in typo.stderr and "gone, good" in typo.stderr, typo.stderr
    retried = cli("sync", "retry", "gone")
    assert retried.returncode == 0 and "1 failed job(s) queued again." in retried.stdout, retried.stderr
    assert "Index queue: 1 waiting, 0 running, 0 failed" in cli("status").stdout


def test_a_full_sync_is_never_swallowed_by_a_waiting_run(queue_env):
    """`coderag sync --full` while an incremental run of the repository waits: the
    queueing lock refused the full job and the request was dropped in silence. The
    waiting run becomes a full one (said in the output); with a run in progress instead,
    the full one is queued after it."""
    import asyncio

    from sqlalchemy import create_engine, text

    from indexer.freshness import queue as q

    env, url, tmp_path = queue_env
    good = make_git_repo(tmp_path / "up", {"a.py": "def a():\n    return 1\n"}, name="good")
    env["CODERAG_REPOS"] = json.dumps([{"name": "good", "url": str(good), "branch": "main"}])

    def cli(*args):
        proc = subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def jobs():
        engine = create_engine(url)
        try:
            with engine.connect() as c:
                return [tuple(r) for r in c.execute(text(
                    "SELECT id, status::text, (args->>'full')::boolean FROM procrastinate_jobs "
                    "WHERE task_name = 'coderag:index_repo' ORDER BY id"))]
        finally:
            engine.dispose()

    assert "queued as job" in cli("sync", "repo", "good")
    ((job, status, full),) = jobs()
    assert (status, full) == ("todo", False)
    upgraded = cli("sync", "repo", "good", "--full")
    assert f"(job {job}); it is now a full re-index" in upgraded, upgraded
    assert jobs() == [(job, "todo", True)]  # the one waiting run, now full
    again = json.loads(cli("sync", "repo", "good", "--full", "--json"))
    assert again == {"source": "good", "mode": "queued", "job": job, "full": True, "waiting": True,
                     "upgraded": False}, again
    assert "a run is already waiting" in cli("sync", "repo", "good")  # incremental: covered as before
    assert jobs() == [(job, "todo", True)]

    app = q.make_app(url)

    async def take_it():  # a worker starts the waiting run
        async with app.open_async():
            worker = await app.job_manager.register_worker()
            await app.job_manager.fetch_job(queues=[q.QUEUE], worker_id=worker)

    asyncio.run(take_it())
    after = json.loads(cli("sync", "repo", "good", "--full", "--json"))
    assert after["job"] not in (None, job) and after["full"] and not after["waiting"], after
    assert jobs() == [(job, "doing", True), (after["job"], "todo", True)]  # queued after the run in progress


def test_sigterm_ends_a_worker_after_the_job_in_hand_with_status_143(settings_env, store, postgres_server_url,
                                                                     tmp_path):
    """SIGTERM (docker stop, Kubernetes) is procrastinate's graceful shutdown: the job in
    hand finishes and is recorded, then the worker exits 143 (128 + SIGTERM), as the
    exit-code table says; it exited 0, which hid the signal from a supervisor."""
    from sqlalchemy import create_engine, text

    from common.errors import ExitCode

    fake = start_fake_voyage()
    fake.latency = 4.0  # the job is still running when the signal comes
    up = make_git_repo(tmp_path / "up", {"a.py": "def a():\n    return 1\n"}, name="slow")
    try:
        with fresh_database(postgres_server_url) as url:
            env = dict(settings_env, CODERAG_DATABASE_URL=url, CODERAG_INDEX_QUEUE="procrastinate",
                       VOYAGE_API_KEY="pa-test", VOYAGE_BASE_URL=fake.base_url, CODERAG_EMBEDDING_RUNTIME="auto",
                       CODERAG_METRICS_PORT="0",
                       CODERAG_REPOS=json.dumps([{"name": "slow", "url": str(up), "branch": "main"}]))
            queued = subprocess.run([sys.executable, "-m", "bot.cli", "sync", "repo", "slow"], env=env,
                                    capture_output=True, text=True, timeout=300)
            assert queued.returncode == 0, queued.stderr
            engine = create_engine(url)
            try:
                with open(tmp_path / "w.log", "w") as log:
                    worker = _worker(env, "w0", log)
                try:
                    deadline = time.monotonic() + 300
                    while True:  # the embedding request is in flight
                        with engine.connect() as c:
                            doing = c.execute(text("SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing' "
                                                   "AND task_name = 'coderag:index_repo'")).scalar()
                        if doing:
                            break
                        assert worker.poll() is None and time.monotonic() < deadline, (tmp_path / "w.log").read_text()
                        time.sleep(0.2)
                    code = stop_process(worker, sig=signal.SIGTERM, timeout=300)
                finally:
                    stop_process(worker, sig=signal.SIGKILL, timeout=30)  # only if still running
                with engine.connect() as c:
                    status = c.execute(text("SELECT status::text FROM procrastinate_jobs "
                                            "WHERE task_name = 'coderag:index_repo'")).scalar()
                    indexed = c.execute(text('SELECT "commit" FROM index_state WHERE name = \'slow\'')).scalar()
            finally:
                engine.dispose()
    finally:
        fake.close()
    text_ = (tmp_path / "w.log").read_text()
    assert code == ExitCode.TERMINATED == 143, (code, text_[-3000:])
    assert status == "succeeded" and indexed == head_sha(up), (status, indexed, text_[-3000:])
    assert "SIGTERM received" in text_ and "Waiting for job to finish" in text_, text_[-3000:]
    # every record is one line with its time and level (a log collector's unit)
    assert all(LOG_LINE.match(x) for x in text_.splitlines()), text_[-3000:]


def test_index_jobs_metric_reads_the_counts_at_each_scrape():
    from bot import metrics

    counts = {"by_source": {"svc": {"todo": 2, "doing": 1, "failed": 0}}}
    metrics.watch_index_jobs(lambda: counts)
    body = metrics.render()[0].decode()
    assert 'coderag_index_jobs{source="svc",status="todo"} 2.0' in body
    assert 'coderag_index_jobs{source="svc",status="doing"} 1.0' in body
    counts["by_source"]["svc"]["todo"] = 0
    assert 'coderag_index_jobs{source="svc",status="todo"} 0.0' in metrics.render()[0].decode()
    metrics.watch_index_jobs(lambda: 1 / 0)  # an unreadable queue never breaks a scrape
    assert "coderag_index_jobs" in metrics.render()[0].decode()


def test_readyz_body_carries_the_index_jobs_and_survives_an_unreadable_queue():
    import asyncio
    from types import SimpleNamespace

    from bot.health import _index_jobs

    counts = {"todo": 1, "doing": 0, "failed": 2, "by_source": {"svc": {"todo": 1, "doing": 0, "failed": 2}}}
    ctx = SimpleNamespace(freshness=SimpleNamespace(workers=SimpleNamespace(counts=lambda: counts)))
    assert asyncio.run(_index_jobs(ctx)) == counts
    assert asyncio.run(_index_jobs(SimpleNamespace(freshness=None))) is None

    def down():
        raise ConnectionError("database gone")

    ctx.freshness.workers.counts = down  # never a reason to fail readiness: the database check says it
    assert asyncio.run(_index_jobs(ctx)) == "unavailable"  # said, not left out


def test_queue_commands_fail_in_one_line_without_a_reachable_postgresql(tmp_path):
    from common.errors import ExitCode
    from indexer.store.weaviate_server import free_ports

    port = free_ports(1)[0]  # nothing listens there
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CODERAG_", "WEAVIATE_"))}
    base.update(CODERAG_HOME=str(tmp_path / "home"), CODERAG_INDEX_QUEUE="procrastinate",
                CODERAG_REPOS=json.dumps([{"name": "a", "url": str(tmp_path / "a"), "branch": "main"}]))
    down = dict(base, CODERAG_DATABASE_URL=f"postgresql+psycopg://bob:s3cret-pw@127.0.0.1:{port}/x",
                WEAVIATE_URL=f"http://127.0.0.1:{port}")
    # (a worker with its database down waits for it: tests/faults/test_faults_queue_worker.py)
    for env, args, code, says in ((down, ("sync", "repo", "a"), ExitCode.DATABASE_ERROR, "cannot reach"),
                                  (base, ("worker",), ExitCode.USAGE, "needs PostgreSQL"),
                                  (base, ("sync", "retry"), ExitCode.USAGE, "needs PostgreSQL")):
        proc = subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True, text=True,
                              timeout=300)
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("coderag: error")]
        assert proc.returncode == code and len(lines) == 1 and says in lines[0], (args, proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr and "s3cret-pw" not in proc.stderr, proc.stderr


def test_worker_refuses_an_embedded_weaviate(tmp_path):
    """Without WEAVIATE_URL each worker would start an embedded Weaviate of its own: N
    workers, N private indexes, and `serve` reading none of them. Refused in one line
    naming the variable, exit USAGE, before any connection or model load."""
    from common.errors import ExitCode

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODERAG_", "WEAVIATE_"))}
    env.update(CODERAG_HOME=str(tmp_path / "home"), CODERAG_INDEX_QUEUE="procrastinate",
               CODERAG_DATABASE_URL="postgresql+psycopg://bob:pw@127.0.0.1:9/x")
    proc = subprocess.run([sys.executable, "-m", "bot.cli", "worker"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("coderag: error: coderag worker needs a shared Weaviate: set WEAVIATE_URL"), line
    assert not (tmp_path / "home" / "weaviate").exists()  # no embedded server was started


#: `coderag` in a Python where the index queue's packages are not installed (an import of
#: a module set to None in sys.modules fails as a missing package does).
_WITHOUT_THE_POSTGRES_EXTRA = ("import sys\n"
                               "for name in ('procrastinate', 'psycopg', 'psycopg_pool'):\n"
                               "    sys.modules[name] = None\n"
                               "from bot.cli import main\n"
                               "sys.argv = ['coderag', *sys.argv[1:]]\n"
                               "main()\n")


@pytest.mark.parametrize("args", [("worker",), ("sync", "repo", "a"), ("sync", "retry"), ("status",)])
def test_queue_commands_without_the_postgres_extra_name_it_in_one_line(tmp_path, args):
    """Without procrastinate and psycopg (coderag installed without its `postgres` extra)
    a queue command ended in a ModuleNotFoundError traceback, or said "missing driver":
    one line naming the pip extra, exit USAGE, before any connection."""
    from common.errors import ExitCode

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODERAG_", "WEAVIATE_"))}
    env.update(CODERAG_HOME=str(tmp_path / "home"), CODERAG_INDEX_QUEUE="procrastinate",
               CODERAG_DATABASE_URL="postgresql+psycopg://bob:pw@127.0.0.1:9/x", WEAVIATE_URL="http://127.0.0.1:9",
               CODERAG_REPOS=json.dumps([{"name": "a", "url": str(tmp_path / "a"), "branch": "main"}]))
    proc = subprocess.run([sys.executable, "-c", _WITHOUT_THE_POSTGRES_EXTRA, *args], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == ExitCode.USAGE, (proc.returncode, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("coderag: error: the index queue") and "pip install 'coderag[postgres]'" in line, line


def test_making_the_queue_tables_leaves_no_advisory_lock_held(postgres_server_url):
    """The schema lock is taken and released on one connection: a release sent on another
    pooled connection failed ("you don't own a lock") and left an idle connection holding
    it, so every later worker or `coderag sync` waited forever."""
    from sqlalchemy import create_engine, text

    from indexer.freshness import queue as q

    with fresh_database(postgres_server_url) as url:
        app = q.make_app(url)
        with app.open():
            made = [q.ensure_schema(app) for _ in range(5)]
            for name in ("a", "b"):
                q.enqueue_repo(app, name)
            engine = create_engine(url)
            with engine.connect() as c:
                held = c.execute(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")).scalar()
                # the periodic check is no index job: only the two repositories count
                periodic = c.execute(text("INSERT INTO procrastinate_jobs (queue_name, task_name, args, status) "
                                          "VALUES (:q, 'coderag:retry_stalled_jobs', '{}', 'todo') RETURNING id"),
                                     {"q": q.QUEUE}).scalar()
                c.commit()
            engine.dispose()
            counts = q.queue_counts(app)
    assert made == [True, False, False, False, False] and held == 0
    assert periodic and counts.todo == 2 and set(counts.by_source) == {"a", "b"}


def test_a_running_worker_serves_metrics_with_the_job_gauges(queue_env):
    """`coderag worker`'s /metrics answers 200 with the index-job gauges while its app runs
    jobs (reading the counts reopened the worker's open app: every scrape was a 500)."""
    import urllib.request

    from indexer.store.weaviate_server import free_ports

    env, url, tmp_path = queue_env
    port = free_ports(1)[0]
    up = make_git_repo(tmp_path / "up", {"a.py": "def a():\n    return 1\n"}, name="gone")
    env = dict(env, CODERAG_METRICS_PORT=str(port), CODERAG_METRICS_HOST="127.0.0.1",  # a missing branch: fails at once
               CODERAG_REPOS=json.dumps([{"name": "gone", "url": str(up), "branch": "no-such-branch"}]))
    queued = subprocess.run([sys.executable, "-m", "bot.cli", "sync", "repo", "gone"], env=env, capture_output=True,
                            text=True, timeout=300)
    assert queued.returncode == 0, queued.stderr
    with open(tmp_path / "w.log", "w") as log:
        worker = _worker(env, "w0", log)
        try:
            deadline, last = time.monotonic() + 300, None
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
                        last = (resp.status, resp.read().decode())
                except urllib.error.HTTPError as exc:
                    last = (exc.code, "")
                except OSError:
                    last = None  # not listening yet
                if last and last[0] == 200 and 'coderag_index_jobs{source="gone",status="failed"} 1.0' in last[1]:
                    break
                assert last is None or last[0] == 200, last
                assert worker.poll() is None and time.monotonic() < deadline, (tmp_path / "w.log").read_text()
                time.sleep(0.5)
            assert "coderag_webhook_queue_depth 0.0" in last[1]
        finally:
            stop_process(worker, timeout=60)
    assert "NotImplementedError" not in (tmp_path / "w.log").read_text()


def test_an_unreadable_queue_depth_never_fails_a_scrape(caplog):
    from bot import metrics

    def down():
        raise ConnectionError("database gone\nsecond line")

    metrics.watch_webhook_queue(down)
    try:
        with caplog.at_level("WARNING", logger="bot.metrics"):
            body = metrics.render()[0].decode()
        assert "coderag_webhook_queue_depth NaN" in body and "coderag_queries_total" in body
        lines = [r.getMessage() for r in caplog.records if "queue depth" in r.getMessage()]
        assert len(lines) == 1 and "second line" not in lines[0], lines
    finally:
        metrics.set_webhook_queue_depth(0)


class _SlowSpaces:
    """A worker's runtime whose Confluence sync holds its index slot until released."""

    def __init__(self):
        import threading

        self.started, self.release = threading.Event(), threading.Event()

    def sync_confluence(self, key, reconcile=None, here=False):
        self.started.set()
        assert self.release.wait(300), "never released"


def test_a_stalled_job_is_recovered_while_every_index_slot_is_busy(postgres_server_url):
    """The periodic stalled-job check has a queue and a slot of its own: a killed worker's
    job goes back to the queue while this worker's only index slot runs a long index
    (on the index queue, it waited for the end of that index)."""
    import threading

    from sqlalchemy import create_engine, text

    from indexer.freshness import queue as q

    runtime = _SlowSpaces()
    with fresh_database(postgres_server_url) as url:
        app = q.make_app(url)
        with app.open():
            q.ensure_schema(app)
            q.enqueue_space(app, "BIG")
        worker = threading.Thread(target=q.run_worker, args=(runtime, url),
                                  kwargs=dict(concurrency=1, stalled_after=2, heartbeat=0.5), daemon=True)
        worker.start()
        engine = create_engine(url)
        try:
            assert runtime.started.wait(120), "the long index never started"
            with engine.begin() as c:  # the job of a killed worker (no live worker owns it)
                victim = c.execute(text("INSERT INTO procrastinate_jobs (queue_name, task_name, lock, args, status) "
                                        "VALUES (:q, 'coderag:index_repo', 'repo:victim', '{\"repo\": \"victim\"}', "
                                        "'doing') RETURNING id"), {"q": q.QUEUE}).scalar()
            deadline = time.monotonic() + 120
            while True:
                with engine.connect() as c:
                    status = c.execute(text("SELECT status::text FROM procrastinate_jobs WHERE id = :i"),
                                       {"i": victim}).scalar()
                if status != "doing":
                    break
                assert time.monotonic() < deadline, "the stalled job waited behind the index in progress"
                time.sleep(0.2)
            assert status == "todo" and not runtime.release.is_set() and worker.is_alive()
            with engine.connect() as c:  # the long index still holds the only index slot
                assert c.execute(text("SELECT status::text FROM procrastinate_jobs WHERE args->>'key' = 'BIG'")
                                 ).scalar() == "doing"
                c.execute(text("DELETE FROM procrastinate_jobs WHERE id = :i"), {"i": victim})
                c.commit()
        finally:
            q.stop_worker()
            runtime.release.set()
            worker.join(120)
            q._runtime = None
            engine.dispose()
        assert not worker.is_alive()


@pytest.mark.parametrize("heartbeat, stalled_after", [("60", "60"), ("90", "30")])
def test_worker_refuses_a_heartbeat_not_shorter_than_the_stalled_threshold(tmp_path, heartbeat, stalled_after):
    """A heartbeat at or past --stalled-after makes every live worker look dead: its jobs
    would be queued again for a second run. Refused in one line, exit USAGE, before anything starts."""
    from common.errors import ExitCode

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODERAG_", "WEAVIATE_"))}
    env.update(CODERAG_HOME=str(tmp_path / "home"), CODERAG_INDEX_QUEUE="procrastinate",
               CODERAG_DATABASE_URL="postgresql+psycopg://bob:pw@127.0.0.1:9/x")
    proc = subprocess.run([sys.executable, "-m", "bot.cli", "worker", "--heartbeat", heartbeat, "--stalled-after",
                           stalled_after], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("coderag: error: --heartbeat") and "must be shorter than --stalled-after" in line, line


def test_a_failed_git_fetch_is_retried_and_a_missing_branch_is_not():
    """A clone or fetch that failed (the Git host or the network briefly down) is a transient
    error: the job is retried with backoff; a branch missing from the repository fails at once."""
    from procrastinate.jobs import Job

    from common.errors import BadInput
    from indexer.freshness.queue import QUEUE, RETRY
    from indexer.sources.mirror import MirrorError

    def decision(exc, attempts=0):
        job = Job(id=1, queue=QUEUE, lock="repo:a", queueing_lock="repo:a", task_name="coderag:index_repo",
                  task_kwargs={"repo": "a"}, attempts=attempts)
        return RETRY.get_retry_decision(exception=exc, job=job)

    fetch = MirrorError("git fetch --prune failed in a.git: fatal: unable to access 'https://git.example/a.git/': "
                        "Could not resolve host: git.example")
    assert decision(fetch) is not None and decision(fetch, attempts=3) is not None
    assert decision(fetch, attempts=5) is None  # gives up after 5 attempts: the job fails
    assert decision(MirrorError("branch 'main' not found in https://git.example/a.git", permanent=True)) is None
    assert decision(BadInput("repo 'a' is not configured")) is None


def test_a_failed_job_is_one_redacted_line_and_its_traceback_is_debug(caplog):
    """procrastinate logs a failed job with a 30-line traceback; the worker makes it one line
    (the error's first line, secrets masked): ERROR when it failed, WARNING when it will be
    retried; the traceback only at DEBUG."""
    import logging

    from indexer.freshness.queue import quiet_job_failures

    plog = logging.getLogger("procrastinate.worker")
    before = plog.level, list(plog.filters)
    quiet_job_failures()
    quiet_job_failures()  # idempotent
    try:
        def fail(action, level):
            try:
                raise RuntimeError("git clone https://bob:hunter2secret@git.example/x.git failed\nfatal: more")
            except RuntimeError as exc:
                plog.log(level, "Job coderag:index_repo[7](repo='x') ended with status: Error, lasted 0.1 s",
                         extra={"action": action}, exc_info=exc)

        with caplog.at_level(logging.WARNING):
            fail("job_error", logging.ERROR)
            fail("job_error_retry", logging.INFO)  # procrastinate says a retry at INFO
            plog.info("Job coderag:index_repo[8](repo='x') ended with status: Success")  # below WARNING: dropped
        records = [r for r in caplog.records if r.name == "procrastinate.worker"]
        assert [r.levelname for r in records] == ["ERROR", "WARNING"], [(r.levelname, r.getMessage()) for r in records]
        for r in records:
            text = caplog.handler.format(r)
            assert len(text.splitlines()) == 1 and "Traceback" not in text, text
            assert "RuntimeError: git clone https://bob:" in text and "hunter2secret" not in text, text
        caplog.clear()
        with caplog.at_level(logging.DEBUG):
            fail("job_error", logging.ERROR)
        debug = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
        assert len(debug) == 1 and "Traceback" in caplog.handler.format(debug[0])
    finally:
        plog.setLevel(before[0])
        plog.filters[:] = before[1]


def test_finished_jobs_are_pruned_after_the_retention(postgres_server_url):
    """Finished jobs (succeeded with --keep-jobs, aborted, failed) are deleted with their
    events once older than the retention, by an hourly task on the upkeep queue; recent
    and unfinished ones stay."""
    import asyncio
    from types import SimpleNamespace

    from procrastinate.jobs import Status
    from sqlalchemy import create_engine, text

    from indexer.freshness import queue as q

    ends = {"old-ok": Status.SUCCEEDED, "old-aborted": Status.ABORTED, "old-failed": Status.FAILED,
            "new-ok": Status.SUCCEEDED}
    with fresh_database(postgres_server_url) as url:
        app = q.make_app(url)
        (prune,) = [p for (name, _), p in app.periodic_registry.periodic_tasks.items()
                    if name == "coderag:prune_finished_jobs"]
        assert prune.task.queue == q.UPKEEP_QUEUE and prune.cron == "7 * * * *"
        with app.open():
            q.ensure_schema(app)
            for name in (*ends, "waiting"):
                q.enqueue_repo(app, name)

        async def finish_all():
            async with app.open_async():
                worker = await app.job_manager.register_worker()
                for _ in ends:
                    job = await app.job_manager.fetch_job(queues=[q.QUEUE], worker_id=worker)
                    await app.job_manager.finish_job(job, status=ends[job.task_kwargs["repo"]], delete_job=False)
                await app.job_manager.unregister_worker(worker)

        async def prune_now():
            async with app.open_async():
                await q.prune_finished_jobs(SimpleNamespace(app=app), 0)

        asyncio.run(finish_all())
        engine = create_engine(url)
        try:
            with engine.begin() as c:  # the "old" ones ended 8 days ago (past the 7-day default)
                c.execute(text("UPDATE procrastinate_events SET at = at - interval '192 hours' WHERE job_id IN "
                               "(SELECT id FROM procrastinate_jobs WHERE args->>'repo' LIKE 'old-%')"))
            asyncio.run(prune_now())
            with engine.connect() as c:
                left = dict(c.execute(text("SELECT args->>'repo', status::text FROM procrastinate_jobs")).all())
                orphans = c.execute(text("SELECT count(*) FROM procrastinate_events e LEFT JOIN procrastinate_jobs j "
                                         "ON j.id = e.job_id WHERE j.id IS NULL")).scalar()
        finally:
            engine.dispose()
    assert left == {"new-ok": "succeeded", "waiting": "todo"} and orphans == 0, left


def test_retry_queues_a_sources_latest_failure_once_and_a_later_run_supersedes_a_failure(postgres_server_url):
    """Two failures of one source (the hourly scheduler adds one an hour) are one retry,
    not a queueing-lock error; a failure followed by a later run of its source no longer
    counts as failed."""
    import asyncio

    from procrastinate.jobs import Status

    from indexer.freshness import queue as q

    with fresh_database(postgres_server_url) as url:
        app = q.make_app(url)

        async def run_one(status):
            async with app.open_async():
                worker = await app.job_manager.register_worker()
                job = await app.job_manager.fetch_job(queues=[q.QUEUE], worker_id=worker)
                await app.job_manager.finish_job(job, status=status, delete_job=False)
                await app.job_manager.unregister_worker(worker)

        with app.open():
            q.ensure_schema(app)
        for status in (Status.FAILED, Status.FAILED):  # ghost fails twice
            with app.open():
                q.enqueue_repo(app, "ghost")
            asyncio.run(run_one(status))
        for status in (Status.FAILED, Status.SUCCEEDED):  # healed fails, then a later run succeeds
            with app.open():
                q.enqueue_repo(app, "healed")
            asyncio.run(run_one(status))
        with app.open():
            counts = q.queue_counts(app)
            assert counts.failed == 1 and counts.by_source["ghost"]["failed"] == 1, counts
            assert "healed" not in counts.by_source, counts
            assert q.retry_failed(app) == 1  # ghost's latest failure only; no UniqueViolation
            assert q.retry_failed(app, "ghost") == 0  # its run waits: nothing failed is left to retry
            counts = q.queue_counts(app)
            assert (counts.todo, counts.failed) == (1, 0), counts


def test_a_stalled_full_run_hands_its_fullness_to_the_run_waiting_behind_it(postgres_server_url):
    """A full run whose worker died, with an incremental run of the same repository
    waiting: the stalled run ends (the waiting one does its work), and the waiting run is
    made full, or the full re-index asked for would be lost."""
    import asyncio
    from types import SimpleNamespace

    from sqlalchemy import create_engine, text

    from indexer.freshness import queue as q

    with fresh_database(postgres_server_url) as url:
        app = q.make_app(url)
        with app.open():
            q.ensure_schema(app)
            full = q.queue_repo(app, "svc", full=True).job

        async def start_then_die():  # a worker takes the full run, then goes silent
            async with app.open_async():
                worker = await app.job_manager.register_worker()
                await app.job_manager.fetch_job(queues=[q.QUEUE], worker_id=worker)

        asyncio.run(start_then_die())
        with app.open():
            waiting = q.queue_repo(app, "svc").job  # a push: an incremental run queued behind it
        engine = create_engine(url)
        try:
            with engine.begin() as c:
                c.execute(text("UPDATE procrastinate_workers SET last_heartbeat = now() - interval '1 hour'"))

            async def check():
                async with app.open_async():
                    return await q.retry_stalled_jobs(SimpleNamespace(app=app), 0)

            assert asyncio.run(check()) == 1
            with engine.connect() as c:
                jobs = {r[0]: (r[1], r[2]) for r in c.execute(text(
                    "SELECT id, status::text, (args->>'full')::boolean FROM procrastinate_jobs "
                    "WHERE task_name = 'coderag:index_repo'"))}
        finally:
            engine.dispose()
    assert jobs == {full: ("aborted", True), waiting: ("todo", True)}, jobs


def test_a_failure_stays_counted_until_a_run_of_its_source_succeeds(postgres_server_url):
    """A failed source's count dropped to 0 as soon as the scheduler queued its hourly
    safety re-fetch: the failure vanished from `coderag status` and /metrics while nothing
    had succeeded. It stays counted while later runs wait or run, and goes once one
    succeeds (its job deleted on success: its run's outcome says so)."""
    import asyncio

    from procrastinate.jobs import Status

    from indexer.freshness import queue as q

    with fresh_database(postgres_server_url) as url:
        app = q.make_app(url)

        async def finish(job, status, delete):
            async with app.open_async():
                await app.job_manager.finish_job(job, status=status, delete_job=delete)

        with app.open():
            q.ensure_schema(app)
            q.enqueue_repo(app, "svc")
        asyncio.run(finish(_fetch_one(app), Status.FAILED, False))
        with app.open():
            q.enqueue_repo(app, "svc")  # the scheduler's safety re-fetch
            counts = q.queue_counts(app)
        assert (counts.todo, counts.failed) == (1, 1) and counts.by_source["svc"]["failed"] == 1, counts
        later = _fetch_one(app)  # it runs ...
        assert q.queue_counts(url).by_source["svc"] == {"todo": 0, "doing": 1, "failed": 1}
        run = q._JobRun(app.coderag_conninfo, later.id, "w", beat_s=1, alive_s=10, source="svc")
        assert run.claim()
        run.end("succeeded")  # ... and succeeds: its job is deleted (the worker's default)
        asyncio.run(finish(later, Status.SUCCEEDED, True))
        counts = q.queue_counts(url)
        assert (counts.todo, counts.doing, counts.failed) == (0, 0, 0), counts


def test_a_retried_job_gets_the_whole_retry_policy_again(postgres_server_url):
    """`coderag sync retry` of a job that failed after its 5 retries gave it one attempt
    (procrastinate counts on from the exhausted attempts): a transient error then failed it
    for good at once. A retried job starts its attempts from zero."""
    import asyncio

    from procrastinate.jobs import Status
    from sqlalchemy import create_engine, text

    from indexer.freshness import queue as q
    from indexer.sources.mirror import MirrorError

    with fresh_database(postgres_server_url) as url:
        app = q.make_app(url)

        async def fail(job):
            async with app.open_async():
                await app.job_manager.finish_job(job, status=Status.FAILED, delete_job=False)

        with app.open():
            q.ensure_schema(app)
            q.enqueue_repo(app, "svc")
        asyncio.run(fail(_fetch_one(app)))
        engine = create_engine(url)
        try:
            with engine.begin() as c:  # as after the last of its retries
                c.execute(text("UPDATE procrastinate_jobs SET attempts = 6"))
        finally:
            engine.dispose()
        with app.open():
            assert q.retry_failed(app) == 1
        job = _fetch_one(app)
    assert job.attempts == 0, job
    fetch_failed = MirrorError("git fetch failed: Could not resolve host: git.example")
    assert q.RETRY.get_retry_decision(exception=fetch_failed, job=job) is not None


def test_sync_all_queues_every_repository_and_help_shows_flags_without_a_type(queue_env):
    """`coderag sync --all` queues a run of every configured repository (one line each);
    --help shows flags as flags (`--keep-jobs`, not `--keep-jobs <bool>`)."""
    env, url, tmp_path = queue_env
    env["CODERAG_REPOS"] = json.dumps([{"name": n, "url": str(tmp_path / n), "branch": "main"}
                                       for n in ("a", "b", "c")])

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True, text=True,
                              timeout=300)

    first = cli("sync", "--all")
    assert first.returncode == 0, first.stderr
    assert [x.split(":")[0] for x in first.stdout.splitlines()] == ["a", "b", "c"], first.stdout
    assert all("queued as job" in x for x in first.stdout.splitlines()), first.stdout
    again = cli("sync", "--all", "--json")
    assert [json.loads(x)["waiting"] for x in again.stdout.splitlines()] == [True, True, True], again.stdout
    assert json.loads(cli("status", "--json").stdout)["queue"] == {"waiting": 3, "running": 0, "failed": 0}
    for args in (("worker", "--help"), ("sync", "--help"), ("sync", "repo", "--help"), ("status", "--help")):
        text = cli(*args).stdout
        assert "--help" in text and "<bool>" not in text, (args, text)
    assert "--stalled-after" in (worker := cli("worker", "--help").stdout) and "SECONDS" in worker  # a value: what it is


def test_status_sync_and_worker_leave_no_connection_open(queue_env):
    """Each `coderag status` and `coderag sync` left psycopg connections to the garbage
    collector (the run-time configuration's seed and the status reads never closed their
    engine): a ResourceWarning at every start. Run here with ResourceWarning an error."""
    env, url, tmp_path = queue_env
    up = make_git_repo(tmp_path / "up", {"a.py": "def a():\n    return 1\n"}, name="svc")
    env = dict(env, PYTHONWARNINGS="error::ResourceWarning", PYTHONDEVMODE="1",
               CODERAG_REPOS=json.dumps([{"name": "svc", "url": str(up), "branch": "main"}]))
    for args in (("sync", "repo", "svc"), ("status",), ("status", "--json"), ("sync", "retry")):
        proc = subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0 and "ResourceWarning" not in proc.stderr, (args, proc.stderr[-3000:])
    with open(tmp_path / "w.log", "w") as log:
        worker = _worker(env, "w0", log)
    try:
        deadline = time.monotonic() + 300
        while "Starting worker on queues coderag-index" not in (tmp_path / "w.log").read_text():
            assert worker.poll() is None and time.monotonic() < deadline, (tmp_path / "w.log").read_text()
            time.sleep(0.2)
    finally:
        code = stop_process(worker, timeout=60)
    text = (tmp_path / "w.log").read_text()
    assert code == 143 and "ResourceWarning" not in text, text[-3000:]
