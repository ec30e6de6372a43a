"""Index-queue throughput with 1, 2 and 3 `coderag worker` processes, measured in one run.

The jobs are I/O-bound on purpose: every repository's chunks are embedded through a local
Voyage stand-in (real ``voyageai`` client, loopback HTTP) that answers each request after a
fixed latency (``--latency``, seconds), as a remote embedding API does. Each worker count
gets a fresh queue database and a reset index; the clock runs from the first enqueue until
the queue is empty (worker start-up excluded). Real PostgreSQL and Weaviate are started for
the run. Prints JSON: seconds and jobs per minute per worker count, and each count's
speed-up over one worker. On this 2-core machine CPU-bound jobs (the local model) do not
scale past the cores; ``--latency 0`` shows that case and is reported as such.

Steady state, not start-up: before the clock each worker runs one warm-up job (a
repository of its own, outside the measured ones), so the first job of a process (its
Weaviate and embedding clients, the imports of the index path) is not counted against the
counts with more workers (it was: over 4 rounds of jobs, each worker's first one weighed
as much as over 12). The end of the run is seen through one kept connection and a plain
count, every 0.1 s (a new connection and the status query per look loaded the 2 cores the
workers share). ``--out FILE`` also writes the JSON there (``bench/results/``).

    python bench/queue_bench.py [--repos 24] [--latency 2.0] [--out bench/results/queue_bench.json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def _start_worker(env: dict, name: str, log: Path) -> subprocess.Popen:
    with open(log, "w") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen([sys.executable, "-m", "bot.cli", "worker", "--name", name, "--heartbeat", "1"],
                                env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def _drain(sql, q) -> None:
    """Wait until no index job waits or runs (one connection, a plain count every 0.1 s)."""
    from sqlalchemy import text

    with sql.connect() as c:
        while c.execute(text("SELECT count(*) FROM procrastinate_jobs WHERE queue_name = :q "
                             "AND status IN ('todo', 'doing')"), {"q": q.QUEUE}).scalar():
            c.commit()  # a fresh snapshot at each look
            time.sleep(0.1)


def _one(count: int, url: str, env: dict, upstreams: dict, warmups: list[str], work: Path) -> dict:
    from sqlalchemy import create_engine, text

    from indexer.freshness import queue as q

    subprocess.run([sys.executable, "-m", "bot.cli", "reset", "--yes"], env=env, cwd=ROOT, check=True,
                   capture_output=True)
    sql = create_engine(url)
    procs: list[subprocess.Popen] = []
    try:
        for i in range(count):  # start-up excluded from the clock: wait until each is registered
            procs.append(_start_worker(env, f"w{i}", work / f"w{count}-{i}.log"))
            deadline = time.monotonic() + 300
            while True:
                with sql.connect() as c:
                    have = c.execute(text("SELECT to_regclass('procrastinate_workers') IS NOT NULL")).scalar()
                    n = c.execute(text("SELECT count(*) FROM procrastinate_workers")).scalar() if have else 0
                if n > i:
                    break
                if procs[-1].poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"worker did not start: {(work / f'w{count}-{i}.log').read_text()[-2000:]}")
                time.sleep(0.2)
        app = q.make_app(url)
        with app.open():
            for name in warmups[:count]:  # one warm-up job per worker, off the clock
                q.enqueue_repo(app, name)
            _drain(sql, q)
            t0 = time.perf_counter()
            for name in upstreams:
                q.enqueue_repo(app, name)
            _drain(sql, q)
            seconds = time.perf_counter() - t0
            counts = q.queue_counts(app)
        if counts.failed:
            raise SystemExit(f"{counts.failed} jobs failed with {count} workers")
        return {"workers": count, "seconds": round(seconds, 2), "jobs": len(upstreams),
                "jobs_per_minute": round(len(upstreams) * 60 / seconds, 1)}
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        sql.dispose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=int, default=24, help="repositories, one index job each (24)")
    ap.add_argument("--latency", type=float, default=2.0, help="seconds per embedding request (2.0; 0: CPU-bound)")
    ap.add_argument("--workers", default="1,2,3", help="worker counts to measure (1,2,3)")
    ap.add_argument("--out", type=Path, help="also write the JSON to this file")
    args = ap.parse_args()
    counts = [int(x) for x in args.workers.split(",") if x.strip()]
    if args.repos < 1 or not counts or min(counts) < 1:
        ap.error("--repos and every worker count must be >= 1")
    from helpers.fake_voyage import start_fake_voyage
    from helpers.gitrepo import make_git_repo
    from helpers.postgres import fresh_database, postgres_server
    from indexer.store.weaviate_server import find_binary, start_server

    work = Path(tempfile.mkdtemp(prefix="coderag-queue-bench-"))
    fake = start_fake_voyage()
    fake.latency = args.latency
    proc, info = start_server(find_binary(os.environ.get("WEAVIATE_BINARY")), work / "weaviate", work / "weaviate.log", detach=False)
    results = []
    try:
        upstreams = {f"r{i:02d}": make_git_repo(work / "up", {f"pkg{i}/m.py": f"def f{i}():\n    return {i}\n" * 5},
                                                name=f"r{i:02d}") for i in range(args.repos)}
        warmups = {f"warm{i}": make_git_repo(work / "up", {f"warm{i}/m.py": f"def w{i}():\n    return {i}\n" * 5},
                                             name=f"warm{i}") for i in range(max(counts))}
        base = {k: v for k, v in os.environ.items() if not k.startswith(("CODERAG_", "WEAVIATE_", "VOYAGE_"))}
        base.update(WEAVIATE_URL=f"http://127.0.0.1:{info.http_port}", WEAVIATE_GRPC_PORT=str(info.grpc_port),
                    VOYAGE_API_KEY="pa-bench", VOYAGE_BASE_URL=fake.base_url, CODERAG_INDEX_QUEUE="procrastinate",
                    CODERAG_METRICS_PORT="0",
                    CODERAG_REPOS=json.dumps([{"name": n, "url": str(p), "branch": "main"}
                                              for n, p in {**upstreams, **warmups}.items()]))
        with postgres_server() as server:
            for count in counts:
                with fresh_database(server) as url:
                    env = dict(base, CODERAG_DATABASE_URL=url, CODERAG_HOME=str(work / f"home{count}"))
                    results.append(_one(count, url, env, upstreams, list(warmups), work))
    finally:
        fake.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)
    one = next((r["seconds"] for r in results if r["workers"] == 1), None)
    for r in results:
        r["speedup_vs_1"] = round(one / r["seconds"], 2) if one else None
    report = json.dumps({"bench": "queue", "latency_s": args.latency, "repos": args.repos,
                         "warm_up": "one job per worker",
                         "bound": "io (embedding API latency)" if args.latency > 0 else "cpu (2 cores)",
                         "cpus": len(os.sched_getaffinity(0)), "results": results}, indent=2)
    print(report)
    if args.out:
        args.out.write_text(report + "\n")


if __name__ == "__main__":
    main()
