"""A real PostgreSQL server for tests: ``CODERAG_TEST_POSTGRES_URL`` when set (CI starts
one with ``scripts/start_postgres.sh``), else a throw-away cluster started by that script
for the pytest session and stopped afterwards. Each test gets its own fresh database."""
from __future__ import annotations

import os
import re
import subprocess
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "start_postgres.sh"


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yield a server URL (``postgresql+psycopg://…/postgres``); stop it after if we started it."""
    url = os.environ.get("CODERAG_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    out = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        from helpers.components import missing

        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        missing("a PostgreSQL server", f"scripts/start_postgres.sh failed ({last}); "
                "bash scripts/install.sh --test installs PostgreSQL from Debian packages")
    env = dict(re.findall(r"^export (\w+)=(.*)$", out.stdout, re.M))
    try:
        yield env["CODERAG_TEST_POSTGRES_URL"]
    finally:
        subprocess.run(["bash", str(SCRIPT), "--stop", env["CODERAG_TEST_POSTGRES_DIR"]], check=False,
                       capture_output=True, timeout=120)


@contextmanager
def fresh_database(server_url: str) -> Iterator[str]:
    """Create an empty database on the server, yield its URL, drop it afterwards."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


class PrivateServer:
    """A PostgreSQL cluster of one test's own (``scripts/start_postgres.sh``), which the
    test may stop, start again on the same port, or freeze: ``url`` and ``dir`` (the
    script's ``CODERAG_TEST_POSTGRES_URL`` and ``CODERAG_TEST_POSTGRES_DIR``)."""

    def __init__(self, url: str, directory: str):
        self.url, self.dir = url, directory

    def _pg_ctl(self, args: str) -> None:
        import shutil

        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: p.parent.parent.name)
        pg_ctl = str(found[-1]) if found else (shutil.which("pg_ctl") or "pg_ctl")
        cmd = f"'{pg_ctl}' -D '{self.dir}/data' {args}"
        argv = ["su", "postgres", "-s", "/bin/sh", "-c", cmd] if os.geteuid() == 0 else ["sh", "-c", cmd]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr

    def stop(self) -> None:
        """Shut the server down (``pg_ctl stop -m fast``: every connection is closed)."""
        self._pg_ctl("-m fast -w -t 60 stop")

    def start(self) -> None:
        """Start it again, on its port, with the options of its first start."""
        port = make_url(self.url).port
        self._pg_ctl(f"-l '{self.dir}/server.log' -w -t 60 -o \"-h 127.0.0.1 -p {port} -k '{self.dir}/data'\" start")

    def postmaster_pid(self) -> int:
        """The server's main process (the first line of ``postmaster.pid``)."""
        return int((Path(self.dir) / "data" / "postmaster.pid").read_text().split()[0])


@contextmanager
def private_server() -> Iterator[PrivateServer]:
    """A :class:`PrivateServer`, deleted afterwards (with its data)."""
    out = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        from helpers.components import missing

        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        missing("a PostgreSQL server", f"scripts/start_postgres.sh failed ({last})")
    env = dict(re.findall(r"^export (\w+)=(.*)$", out.stdout, re.M))
    try:
        yield PrivateServer(env["CODERAG_TEST_POSTGRES_URL"], env["CODERAG_TEST_POSTGRES_DIR"])
    finally:
        subprocess.run(["bash", str(SCRIPT), "--stop", env["CODERAG_TEST_POSTGRES_DIR"]], check=False,
                       capture_output=True, timeout=120)
