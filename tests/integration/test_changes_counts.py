"""``changes`` counts every commit of its window, not only the ones it lists: the header,
the authors and "… and K more" of the CLI, the chat reply and ``ask``'s note, and the
``total``/``truncated`` of ``--json``. Read from a real repository with set commit dates,
indexed into real Weaviate and SQLite."""
from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from helpers.history_repo import build_history_repo
from common.settings import Settings

FUNCTIONS = 12


def _busy(version: dict[int, str], gone: set[int] = frozenset()) -> str:
    """``app/busy.py`` with functions ``f0``…``f11`` (``version[i]`` in ``f{i}``'s body)."""
    return "".join(f"def f{i}(x):\n    return x + {version.get(i, '0')}\n\n\n"
                   for i in range(FUNCTIONS) if i not in gone)


def _history() -> list[tuple[str, str, float, dict[str, str]]]:
    """``init`` (10 days old) then seven one-function edits (bob 4, carol 3, within the
    last 7 days) and ``sweep`` (dave, 2 h ago) changing f0–f8 and deleting f9–f11, as
    ``build_history_repo`` takes them (days before now)."""
    steps = [("init", "alice", 240, {}, set())] + [
        (f"edit{i}", "bob" if i % 2 == 0 else "carol", 150 - 20 * i, {i: str(i + 1)}, set()) for i in range(7)
    ] + [("sweep", "dave", 2, {i: "99" for i in range(9)}, {9, 10, 11})]
    version: dict[int, str] = {}
    out = []
    for label, author, hours, edits, gone in steps:
        version.update(edits)
        out.append((label, author, hours / 24, {"app/busy.py": _busy(version, gone)}))
    return out


@pytest.fixture
def busy(tmp_path, store, local_embedder, settings_env, monkeypatch):
    """The busy repo indexed as ``busy``; ``(repo, sessions, settings)``."""
    from common.db import open_database
    from indexer import index_repository

    monkeypatch.setenv("CODERAG_DATABASE_URL", f"sqlite:///{tmp_path / 'busy.db'}")
    repo = build_history_repo(tmp_path, int(time.time()), name="busy", history=_history())
    settings = Settings.from_env()
    sessions = open_database(settings)
    index_repository(repo.root, name="busy", settings=settings, store=store, embedder=local_embedder,
                     sessions=sessions)
    return repo, sessions, settings


def _report(busy, query, limit, since="7d"):
    from indexer.read import changes_report, parse_since

    _repo, sessions, settings = busy
    return changes_report(sessions, settings, query, since=parse_since(since), limit=limit)


def test_a_cut_list_still_counts_every_commit_and_author_of_the_window(busy):
    from bot.knowledge_text import format_changes

    repo = busy[0]
    report = _report(busy, "app/busy.py", limit=3)
    assert report.total == 8 and report.exact and report.truncated
    assert [c.sha for c in report.commits] == [repo.shas["sweep"], repo.shas["edit6"], repo.shas["edit5"]]
    assert {a: len(s) for a, s in report.authors.items()} == {"bob": 4, "carol": 3, "dave": 1}
    text = format_changes(report, limit=3)
    head = text.splitlines()[0]
    assert head.startswith("8 commit(s) touched busy/app/busy.py since "), head
    assert "bob (4 commits: " in head and "carol (3 commits: " in head and f"dave ({repo.shas['sweep'][:7]})" in head
    assert text.rstrip("\n").endswith("… and 5 more"), text
    data = report.to_dict()
    assert (data["total"], data["truncated"], data["total_exact"], len(data["commits"])) == (8, True, True, 3)
    assert data["authors"] == {"bob": 4, "carol": 3, "dave": 1}
    whole = _report(busy, "app/busy.py", limit=50)
    assert (whole.total, len(whole.commits), whole.truncated) == (8, 8, False)
    assert "more" not in format_changes(whole).splitlines()[-1]


def test_a_symbols_commits_are_counted_past_the_list(busy):
    from bot.knowledge_text import format_changes

    repo = busy[0]
    report = _report(busy, "f2", limit=1)
    assert report.kind == "symbol"
    assert (report.total, [c.sha for c in report.commits]) == (2, [repo.shas["sweep"]])
    assert {a: len(s) for a, s in report.authors.items()} == {"dave": 1, "bob": 1}
    text = format_changes(report, limit=1)
    assert text.startswith("2 commit(s) changed `f2` ") and text.rstrip("\n").endswith("… and 1 more"), text


def test_a_commit_changing_many_functions_counts_the_ones_not_listed(busy):
    from bot.knowledge_text import FUNCTIONS_SHOWN, format_changes

    repo = busy[0]
    sweep = next(c for c in _report(busy, "app/busy.py", limit=1).commits)
    assert sweep.sha == repo.shas["sweep"]
    changes = sorted((f.symbol, f.change) for f in sweep.functions)
    assert changes == sorted([(f"f{i}", "modified") for i in range(9)] + [(f"f{i}", "deleted") for i in (9, 10, 11)])
    text = format_changes(_report(busy, "app/busy.py", limit=1), limit=1)
    listed = [line for line in text.splitlines() if line.startswith("    modified ") or line.startswith("    deleted ")]
    assert len(listed) == FUNCTIONS_SHOWN
    rest = sweep.functions[FUNCTIONS_SHOWN:]
    more = next(line for line in text.splitlines() if line.startswith("    … and "))
    assert more.startswith(f"    … and {len(rest)} more: "), more
    for kind in ("modified", "deleted"):
        n = sum(1 for f in rest if f.change == kind)
        assert (f"{n} {kind}" in more) == bool(n), more


def test_the_ask_note_counts_the_whole_window_and_lists_five(busy):
    from bot.changes import NOTE_COMMITS, recent_changes_note

    repo, sessions, settings = busy
    hit = SimpleNamespace(chunk=SimpleNamespace(repo="busy", path="app/busy.py", start_line=9, end_line=10,
                                                symbol="f2", language="python"))
    note = recent_changes_note(sessions, settings, "who changed f2 in the past week?", [hit])
    lines = note.splitlines()
    assert lines[0].startswith("Recent changes: 8 commit(s) touched busy/app/busy.py"), note
    assert "bob (4 commits: " in lines[0] and "carol (3 commits: " in lines[0]
    assert sum(1 for line in lines if line.startswith("- ")) == NOTE_COMMITS
    assert lines[-1] == f"… and {8 - NOTE_COMMITS} more", note
    # f2's own lines changed in edit2 and sweep, whichever commits are listed
    said = next(line for line in lines if line.startswith("`f2` "))
    assert f"its lines changed in {repo.shas['sweep'][:7]}, {repo.shas['edit2'][:7]}" in said, said


def test_cli_json_says_total_and_truncated_and_the_question_window(busy, monkeypatch, capsys):
    from bot.changes import changes_command

    _repo, _sessions, settings = busy
    changes_command("app/busy.py", "7d", None, None, True, settings=settings)
    data = json.loads(capsys.readouterr().out)
    assert (data["total"], data["truncated"], len(data["commits"])) == (8, False, 8)
    # "today" is midnight UTC: only commits of today's date
    changes_command("what changed in app/busy.py today?", None, None, None, True, settings=settings)
    data = json.loads(capsys.readouterr().out)
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert data["since"].startswith(today + "T00:00:00"), data["since"]
    assert all(c["date"].startswith(today) for c in data["commits"])
    # an explicit --since wins over the question's words
    changes_command("what changed in app/busy.py today?", "30d", None, None, True, settings=settings)
    assert json.loads(capsys.readouterr().out)["since"] < today


def test_each_definition_hit_in_one_file_is_said(busy):
    from bot.changes import recent_changes_note

    repo, sessions, settings = busy

    def hit(symbol: str, start: int):
        return SimpleNamespace(chunk=SimpleNamespace(repo="busy", path="app/busy.py", start_line=start,
                                                     end_line=start + 1, symbol=symbol, language="python"))

    note = recent_changes_note(sessions, settings, "who changed f5 or f9 recently?", [hit("f5", 21), hit("f9", 37)])
    said = {line.split(" ", 1)[0]: line for line in note.splitlines() if line.startswith("`")}
    sweep, edit5 = repo.shas["sweep"][:7], repo.shas["edit5"][:7]
    assert set(said) == {"`f5`", "`f9`"}, note
    assert f"its lines changed in {sweep}, {edit5};" in said["`f5`"], said
    assert f"its lines changed in {sweep};" in said["`f9`"] and edit5 in said["`f9`"], said  # deleted in sweep
    assert note.splitlines()[0].count("busy/app/busy.py") == 1
