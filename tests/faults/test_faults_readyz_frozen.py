"""``/readyz`` while PostgreSQL is frozen (its postmaster SIGSTOP'd): the pool's connections,
whose backends run on, still answered, so the database check said "ok" while no new
connection (a worker's, the queue's) could be made. The check opens a new connection."""
from __future__ import annotations

import os
import signal

from starlette.testclient import TestClient

from helpers.postgres import private_server


def test_readyz_is_not_ready_while_postgresql_is_frozen(settings_env, monkeypatch):
    from bot.server import ServerContext, build_asgi
    from common.db import open_database
    from common.settings import Settings

    with private_server() as pg:
        monkeypatch.setenv("CODERAG_DATABASE_URL", pg.url)
        sessions = open_database(Settings.from_env())
        with TestClient(build_asgi(ServerContext(sessions=sessions))) as client:
            first = client.get("/readyz")  # the pool now holds a connection to a live backend
            assert first.status_code == 200 and first.json()["checks"]["database"] == "ok", first.text
            pid = pg.postmaster_pid()
            os.kill(pid, signal.SIGSTOP)
            try:
                frozen = client.get("/readyz")
            finally:
                os.kill(pid, signal.SIGCONT)
            assert frozen.status_code == 503, frozen.text
            body = frozen.json()
            assert body["ready"] is False and body["failed"] == ["database"], body
            assert body["checks"]["database"].startswith("error:"), body
            again = client.get("/readyz")
            assert again.status_code == 200, again.text
        sessions.kw["bind"].dispose()
