"""PostgreSQL restarted while the query log is being written: every write that returned
is there whole (query row and all its chunk rows), the ones that failed left nothing
behind, and writes succeed again after the restart without restarting the bot."""
from __future__ import annotations

import re
import subprocess
import threading
import time
from pathlib import Path

from helpers.querylog import migrated_sessions, record

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "start_postgres.sh"


def _as_owner(cmd: str) -> subprocess.CompletedProcess:
    import os

    argv = ["su", "postgres", "-s", "/bin/sh", "-c", cmd] if os.geteuid() == 0 else ["sh", "-c", cmd]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def test_postgres_restart_during_query_logging():
    from sqlalchemy import func, select

    from bot.querylog.models import Query, QueryChunk
    from bot.querylog.recorder import QueryLog

    out = subprocess.run(["bash", str(SCRIPT)], check=True, capture_output=True, text=True, timeout=900)
    env = dict(re.findall(r"^export (\w+)=(.*)$", out.stdout, re.M))
    url, pgdir = env["CODERAG_TEST_POSTGRES_URL"], env["CODERAG_TEST_POSTGRES_DIR"]
    try:
        sessions = migrated_sessions(url)
        log = QueryLog(sessions)
        ok: list[str] = []
        failed: list[tuple[str, str]] = []
        stop = threading.Event()

        def writer():
            i = 0
            while not stop.is_set():
                rec = record(question=f"question {i}")
                i += 1
                try:
                    log.record(rec)
                    ok.append(rec.ref)
                except Exception as exc:  # noqa: BLE001 - counted: the database is restarting
                    failed.append((rec.ref, type(exc).__name__))
                    time.sleep(0.05)
                time.sleep(0.005)

        t = threading.Thread(target=writer, daemon=True)
        t.start()
        while len(ok) < 20:
            time.sleep(0.05)
        bin_dir = Path(subprocess.run(["bash", "-c", "ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1"],
                                      capture_output=True, text=True).stdout.strip())
        pg_ctl = bin_dir / "pg_ctl" if (bin_dir / "pg_ctl").exists() else "pg_ctl"
        before = len(ok)
        r = _as_owner(f"'{pg_ctl}' -D '{pgdir}/data' -l '{pgdir}/server.log' -m fast -w -t 60 restart")
        assert r.returncode == 0, r.stderr
        restarted_at = len(ok)
        deadline = time.time() + 60
        while len(ok) < restarted_at + 20:
            assert time.time() < deadline, f"no write succeeded after the restart: {failed[-3:]}"
            time.sleep(0.05)
        stop.set()
        t.join(30)

        with sessions() as s:
            refs = set(s.execute(select(Query.ref)).scalars())
            per_query = dict(s.execute(select(Query.ref, func.count(QueryChunk.id)).join(
                QueryChunk, QueryChunk.query_id == Query.id, isouter=True).group_by(Query.ref)).all())
        print(f"\n[postgres restart] {len(ok)} writes returned ({before} before the restart, "
              f"{len(ok) - restarted_at} after it), {len(failed)} failed during it "
              f"({sorted({e for _r, e in failed})}); rows: {len(refs)} queries, "
              f"{sum(per_query.values())} chunk rows")
        assert set(ok) <= refs  # nothing that returned was lost
        assert all(per_query[r] == 8 for r in ok)  # each one whole
        assert not refs & {r for r, _e in failed}  # nothing half-written by the failed ones
        assert len(refs) == len(ok)
        sessions.kw["bind"].dispose()
    finally:
        subprocess.run(["bash", str(SCRIPT), "--stop", pgdir], capture_output=True, timeout=120)
