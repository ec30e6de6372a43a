"""Query-log benchmark on real SQLite and PostgreSQL; prints one JSON object.

* ``inserts_per_s``: complete query records (1 ``queries`` row + 8 ``query_chunks`` rows,
  one transaction each, through :meth:`QueryLog.record`) written one after another.
* ``stats_s``: wall time of :func:`compute_stats` over the whole window with ``--rows``
  logged queries (default 100k; bulk-loaded with executemany, 10% no-coverage, 5% voted).

PostgreSQL: ``--postgres URL`` (a scratch database is created and dropped), else
``CODERAG_TEST_POSTGRES_URL``, else a throw-away cluster from ``scripts/start_postgres.sh``.

    python bench/querylog_bench.py [--records 1000] [--rows 100000] [--no-postgres]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from sqlalchemy import func, insert, select  # noqa: E402

from bot.querylog.models import Feedback, Query  # noqa: E402
from bot.querylog.privacy import UserHasher  # noqa: E402
from bot.querylog.recorder import QueryLog  # noqa: E402
from bot.querylog.stats import compute_stats  # noqa: E402
from helpers.postgres import fresh_database, postgres_server  # noqa: E402
from helpers.querylog import migrated_sessions, record  # noqa: E402


def bench_inserts(sessions, n: int) -> dict:
    log = QueryLog(sessions, hasher=UserHasher())
    recs = [record(question=f"question {i}?", message_ts=f"{i}.0") for i in range(n)]
    t0 = time.perf_counter()
    for r in recs:
        log.record(r)
    dt = time.perf_counter() - t0
    return {"records": n, "seconds": round(dt, 3), "inserts_per_s": round(n / dt, 1),
            "rows_per_record": 9}


def bulk_load(sessions, rows: int, seed: int = 1) -> None:
    rnd = random.Random(seed)
    now = datetime.now(timezone.utc)
    chans = [f"C{i}" for i in range(20)]
    start = 10_000_000
    with sessions() as s, s.begin():
        base = s.scalar(select(func.coalesce(func.max(Query.id), 0))) + start
        batch, votes = [], []
        for i in range(rows):
            src = rnd.choice(("slack", "slack", "slack", "cli", "teams"))
            no_cov = rnd.random() < 0.1
            batch.append({"id": base + i, "ref": f"{base + i:032x}", "created_at": now - timedelta(seconds=rnd.uniform(0, 6 * 86400)),
                          "source": src, "channel": rnd.choice(chans) if src != "cli" else None,
                          "user": f"U{rnd.randint(1, 500)}", "question": f"question {rnd.randint(1, 5000)}?",
                          "answer": "answer text " * 20, "model": "extractive" if no_cov else "claude-sonnet-5-5",
                          "no_coverage": no_cov, "stale": rnd.random() < 0.03,
                          "retrieve_ms": rnd.lognormvariate(4, 0.5), "expand_ms": rnd.lognormvariate(1, 0.5),
                          "generate_ms": 0.0 if no_cov else rnd.lognormvariate(7.5, 0.4),
                          "post_ms": rnd.lognormvariate(5, 0.3), "input_tokens": 2000, "output_tokens": 300,
                          "cache_read_tokens": 3000, "cache_write_tokens": 0, "cost_usd": 0.0114})
            if rnd.random() < 0.05:
                votes.append({"query_id": base + i, "channel": "C", "message_ts": f"{base + i}.0", "user": "U1",
                              "vote": rnd.choice((1, 1, 1, -1)), "created_at": now})
            if len(batch) >= 10_000:
                s.execute(insert(Query), batch)
                batch = []
        if batch:
            s.execute(insert(Query), batch)
        if votes:
            s.execute(insert(Feedback), votes)


def bench_stats(sessions, rows: int) -> dict:
    t0 = time.perf_counter()
    bulk_load(sessions, rows)
    load = time.perf_counter() - t0
    since = datetime.now(timezone.utc) - timedelta(days=7)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        d = compute_stats(sessions, since)
        times.append(time.perf_counter() - t0)
    return {"rows": d["queries"], "bulk_load_s": round(load, 2), "stats_s": round(min(times), 3),
            "stats_s_runs": [round(t, 3) for t in times], "p95_generate_ms": round(d["latency_ms"]["generate"]["p95"], 1)}


def run(url: str, records: int, rows: int) -> dict:
    sessions = migrated_sessions(url)
    return {**bench_inserts(sessions, records), **bench_stats(sessions, rows)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--postgres", help="PostgreSQL server URL (postgresql+psycopg://...)")
    ap.add_argument("--no-postgres", action="store_true")
    args = ap.parse_args()
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        out["sqlite"] = run(f"sqlite:///{tmp}/bench.db", args.records, args.rows)
    if not args.no_postgres:
        with ExitStack() as stack:
            server = args.postgres or stack.enter_context(postgres_server())
            url = stack.enter_context(fresh_database(server))
            out["postgresql"] = run(url, args.records, args.rows)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
