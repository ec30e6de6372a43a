"""The database cannot write (a full disk under SQLite, a read-only database): an event
and its two retries still give exactly one answer, a replayed slash command runs once,
and /readyz's database check says the database cannot write."""
from __future__ import annotations

import subprocess
import time

import pytest

from bot.health import database_check
from helpers.faults import fill_disk
from helpers.slack_harness import Harness, StubService



def _answers(h):
    return [c for c in h.fake.posts() if c.body.get("blocks")]


def _cannot_write(how, tmp_path, monkeypatch):
    """A session factory on a migrated SQLite database that can no longer write."""
    from sqlalchemy import event

    from common.db import make_engine, open_database
    from common.settings import Settings, load
    from sqlalchemy.orm import sessionmaker

    home = tmp_path / "disk"
    home.mkdir()
    if how == "disk_full":
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(home)], capture_output=True)
        if r.returncode != 0:
            pytest.skip("cannot mount a tmpfs here (not root or no CAP_SYS_ADMIN); the read-only case runs")
    monkeypatch.setenv("CODERAG_HOME", str(home))
    monkeypatch.delenv("CODERAG_DATABASE_URL", raising=False)
    from bot.querylog.privacy import UserHasher

    UserHasher.from_settings(load().querylog, open_database(Settings.from_env()))  # migrated, salt kept, while it still can write
    engine = make_engine(f"sqlite:///{home / 'coderag.db'}")
    if how == "disk_full":
        fill_disk(home)
    else:
        event.listen(engine, "connect", lambda conn, _r: conn.execute("PRAGMA query_only=ON"))
    return home, sessionmaker(engine, expire_on_commit=False)


@pytest.mark.parametrize("how", ["disk_full", "read_only"])
def test_one_event_and_two_retries_give_one_answer_when_the_database_cannot_write(how, tmp_path, monkeypatch):
    home, sessions = _cannot_write(how, tmp_path, monkeypatch)
    try:
        with pytest.raises(Exception):
            database_check(sessions)()  # /readyz: the database cannot write
        service = StubService()
        with Harness(service, sessions=sessions) as h:
            ts, (first, _lat) = h.mention("where is tax computed?", event_id="EvDISKFULL1")
            for retry in (1, 2):
                r, _lat = h.send_event({"type": "app_mention", "user": "U0000001", "ts": ts, "event_ts": ts,
                                        "channel": "C0000001", "text": "<@UBOT> where is tax computed?"},
                                       event_id="EvDISKFULL1", retry=retry)
                assert r.status_code == 200
            h.fake.wait_for(lambda: _answers(h), timeout=30)
            trigger = "13345224609.777.8088930838d88f008e0"
            for _ in range(2):  # the same signed command sent twice
                h.command("ask how is tax rounded?", name="replay", trigger_id=trigger)
            time.sleep(2.0)  # give a second (wrong) answer time to arrive
            assert first.status_code == 200
            assert len(_answers(h)) == 1
            assert [q for q, _hist in service.asked].count("where is tax computed?") == 1
            assert [q for q, _hist in service.asked].count("how is tax rounded?") == 1
    finally:
        if how == "disk_full":
            subprocess.run(["umount", "-l", str(home)], capture_output=True)
