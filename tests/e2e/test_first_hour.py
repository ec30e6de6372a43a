"""What a new user meets in the first hour: Ctrl-C, destructive commands without a
terminal, one exit code for an unknown repo, indexing a subfolder, the slash command's
usage hint and the onboarding setting's description, a lock heartbeat the database refuses."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from common.errors import ExitCode
from helpers.gitrepo import make_git_repo

pytestmark = pytest.mark.weaviate

FILES = {"pkg/mod.py": "def f():\n    return 1\n\n\ndef g():\n    return f()\n", "pkg/other.py": "X = 1\n"}


def cli(env, *args, **kw):
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300, **kw)


@pytest.fixture
def indexed(settings_env, store, tmp_path):
    repo = make_git_repo(tmp_path, FILES, name="hour")
    proc = cli(settings_env, "index", str(repo))
    assert proc.returncode == 0, proc.stderr
    return repo


def _interrupt(env, args, when) -> subprocess.CompletedProcess:
    p = subprocess.Popen([sys.executable, "-m", "bot.cli", *args], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    when(p)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=300)
    return subprocess.CompletedProcess(args, p.returncode, out, err)


def test_ctrl_c_while_starting_and_while_working_prints_one_line(settings_env, store, tmp_path):
    repo = make_git_repo(tmp_path, {f"m{i}.py": f"def f{i}():\n    return {i}\n" * 40 for i in range(60)},
                         name="big")

    def soon(_p):
        time.sleep(0.15)

    def once_working(_p):  # past start-up: loading the model, chunking or embedding
        time.sleep(3.0)

    for when in (soon, once_working):
        proc = _interrupt(settings_env, ["index", str(repo)], when)
        if proc.returncode == 0:  # finished before the signal arrived: nothing to check
            continue
        # 130, or ended by the signal itself (-SIGINT): a shell reports both as 130
        assert proc.returncode in (ExitCode.INTERRUPTED, -signal.SIGINT), (proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.rstrip().splitlines()[-1] == "coderag: interrupted", proc.stderr


def test_remove_and_reset_without_a_terminal_fail_before_deleting(settings_env, indexed):
    for args in (["remove", "hour"], ["reset"]):
        proc = cli(settings_env, *args, stdin=subprocess.DEVNULL)
        assert proc.returncode == ExitCode.USAGE, proc.stderr
        assert "--yes" in proc.stderr and "Delete" not in proc.stdout + proc.stderr
    status = cli(settings_env, "status")
    assert "hour:" in status.stdout
    # an unknown name is the unknown-repo error of every command, before any confirmation
    gone = cli(settings_env, "remove", "nosuch", stdin=subprocess.DEVNULL)
    assert gone.returncode == ExitCode.EMPTY_INDEX, gone.stderr
    assert "no indexed repo named nosuch (indexed: hour)" in gone.stderr and "--yes" not in gone.stderr


def test_an_unknown_repo_is_the_same_error_for_ask_search_and_impact(settings_env, indexed):
    codes = {}
    for args in (["ask", "what does f return?", "--repo", "nosuch"], ["search", "f", "--repo", "nosuch"],
                 ["impact", "f", "--repo", "nosuch"]):
        proc = cli(settings_env, *args)
        codes[args[0]] = proc.returncode
        assert "no indexed repo named nosuch (indexed: hour)" in proc.stderr, proc.stderr
    assert set(codes.values()) == {ExitCode.EMPTY_INDEX}, codes


def test_indexing_a_subfolder_says_the_whole_repository_is_indexed(settings_env, store, tmp_path):
    repo = make_git_repo(tmp_path, FILES, name="sub")
    proc = cli(settings_env, "index", str(repo / "pkg"))
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stdout.split())
    assert f"{repo / 'pkg'} is a folder inside the Git repository {repo}" in said
    assert said.index("is a folder inside") < said.index("Indexed sub")  # before the work, not after
    whole = cli(settings_env, "index", str(repo))
    assert "is a folder inside" not in whole.stdout


def test_slash_usage_hint_and_onboarding_description_match_the_code():
    manifest = yaml.safe_load((Path(__file__).parents[2] / "deploy" / "slack-manifest.yml").read_text())
    hint = manifest["features"]["slash_commands"][0]["usage_hint"]
    assert all(word in hint for word in ("ask", "impact", "who", "drift", "status", "help"))
    from common.settings import SlackSettings

    desc = SlackSettings.model_fields["onboarding_channels"].description
    assert "question" in desc and "new members" not in desc


def test_a_ctrl_c_a_library_wrapped_in_its_own_error_is_still_an_interruption():
    """torch turns a Ctrl-C during its import into a RuntimeError (``Error calling
    __set_name__``): the CLI reads the chain of causes and prints one line."""
    from bot.cli import _interrupted

    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("Error calling __set_name__ on 'SymNumberMemoDescriptor'")
    except RuntimeError as wrapped:
        assert _interrupted(wrapped)
    assert not _interrupted(RuntimeError("a bug"))


def test_a_failed_lock_heartbeat_is_one_warning_line_and_the_run_goes_on(tmp_path, monkeypatch, caplog):
    """Under load SQLite answers a heartbeat with ``database is locked``: that is one
    warning line (no traceback on the user's terminal) and the next beat retries."""
    import logging
    import sqlite3
    import threading

    from common.db import open_database
    from common.settings import Settings
    from indexer.store import repo_lock
    from indexer.store.sql_lock import SchedulerLock

    monkeypatch.setenv("CODERAG_HOME", str(tmp_path / "home"))
    sessions = open_database(Settings.from_env())
    real, calls = SchedulerLock.heartbeat, []

    def flaky(self):
        calls.append(1)
        if len(calls) == 1:
            raise sqlite3.OperationalError("database is locked")
        return real(self)

    crashed = []
    monkeypatch.setattr(SchedulerLock, "heartbeat", flaky)
    monkeypatch.setattr(threading, "excepthook", lambda args: crashed.append(args.exc_value))
    with caplog.at_level(logging.WARNING, logger=repo_lock.__name__):
        with repo_index_lock_held(repo_lock, sessions):
            deadline = time.monotonic() + 60
            while len(calls) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
    assert len(calls) >= 2 and crashed == []  # the beat thread survived and beat again
    warned = [r for r in caplog.records if "heartbeat" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING and warned[0].exc_info is None
    assert "database is locked" in warned[0].getMessage() and "\n" not in warned[0].getMessage()


def repo_index_lock_held(repo_lock, sessions):
    """The repository lock of ``r`` with a short TTL (a beat every 0.1 s)."""
    return repo_lock.repo_index_lock(sessions, "r", wait_s=0, ttl_s=0.3)
