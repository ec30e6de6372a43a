"""``changes``: the commits in a window that touched a path, a symbol or a question's code,
with the functions each changed, read from a real repository whose commit dates are set
(tests/helpers/history_repo.py) and indexed into real Weaviate and SQLite."""
from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from helpers.history_repo import DAY, build_history_repo
from common.errors import BadInput, ExitCode
from common.settings import Settings, load


@pytest.fixture
def shop(tmp_path, store, local_embedder, settings_env, monkeypatch):
    """The history repo indexed as ``shop`` at its head; ``(repo, sessions, settings, service)``."""
    from bot.answer.service import AnswerService
    from common.db import open_database
    from indexer import index_repository

    monkeypatch.setenv("CODERAG_DATABASE_URL", f"sqlite:///{tmp_path / 'changes.db'}")
    repo = build_history_repo(tmp_path, int(time.time()))
    settings = Settings.from_env()
    sessions = open_database(settings)
    index_repository(repo.root, name="shop", settings=settings, store=store, embedder=local_embedder,
                     sessions=sessions)
    service = AnswerService(store, local_embedder, sessions=sessions, settings=load())
    return repo, sessions, settings, service


def _by_label(repo, report) -> dict[str, set[tuple[str, str]]]:
    names = {sha: label for label, sha in repo.shas.items()}
    return {names[c.sha]: {(f.symbol, f.change) for f in c.functions} for c in report.commits}


def _run(shop, query, since="7d", **kw):
    from bot.changes import run_changes
    from indexer.read import parse_since

    repo, sessions, settings, service = shop
    return run_changes(query, sessions=sessions, settings=settings, since=parse_since(since),
                       retriever_factory=lambda: service.retriever, **kw)


def test_a_folder_gives_exactly_the_commits_and_functions_of_the_window(shop):
    repo = shop[0]
    report = _run(shop, "billing/")
    assert report.kind == "path"
    assert _by_label(repo, report) == {
        "cleanup": {("Invoice.tax", "modified"), ("send_invoice", "deleted")},
        "refunds": {("Invoice.total", "modified"), ("refund", "added")},
    }
    assert [c.sha for c in report.commits] == [repo.shas["cleanup"], repo.shas["refunds"]]  # newest first
    c = report.commits[0]
    assert (c.author, c.email, c.message) == ("erin", "erin@example.com", "cleanup: erin's change")
    assert f"billing/invoice.py:11@{repo.shas['cleanup'][:7]}" in c.to_dict()["citations"]


def test_a_file_and_an_iso_date(shop):
    repo = shop[0]
    since = datetime.fromtimestamp(repo.now - 10 * DAY, timezone.utc).date().isoformat()
    report = _run(shop, "shipping/rates.py", since=since)
    assert _by_label(repo, report) == {"rates": {("rate_for", "modified")}}


def test_a_symbol_gives_only_the_commits_that_changed_it(shop):
    repo = shop[0]
    report = _run(shop, "Invoice.tax", since="4w")
    assert report.kind == "symbol"
    assert report.targets[0]["path"] == "billing/invoice.py"
    assert _by_label(repo, report) == {"cleanup": {("Invoice.tax", "modified")},
                                       "tax_round": {("Invoice.tax", "modified")}}
    assert _by_label(repo, _run(shop, "Invoice.tax", since="7d")) == {"cleanup": {("Invoice.tax", "modified")}}


def test_ref_reads_history_from_another_commit(shop):
    repo = shop[0]
    report = _run(shop, "billing/", since="4w", ref=repo.shas["refunds"])
    assert set(_by_label(repo, report)) == {"refunds", "tax_round"}


def test_a_question_reads_the_files_of_its_top_hits(shop):
    repo = shop[0]
    report = _run(shop, "how is the shipping rate of a parcel computed from its weight?")
    assert report.kind == "question"
    paths = {t["path"] for t in report.targets}
    assert "shipping/rates.py" in paths
    touched = {"billing/invoice.py": {"cleanup", "refunds"}, "shipping/rates.py": {"rates"}}
    expected = set().union(*(touched.get(p, set()) for p in paths))
    got = _by_label(repo, report)
    assert set(got) == expected
    assert got["rates"] == {("rate_for", "modified")}


def test_unknown_path_and_symbol_and_bad_since_are_one_line_errors(shop):
    from bot.impact import UnknownSymbol
    from indexer.read import parse_since

    with pytest.raises(BadInput, match="no indexed file or folder"):
        _run(shop, "billing/nothing.py")
    with pytest.raises(UnknownSymbol):
        _run(shop, "Invoice.no_such_method")
    for ref in ("--output=/tmp/x", "main..HEAD", "a b"):  # a ref never reaches git as an option
        with pytest.raises(BadInput, match="--ref"):
            _run(shop, "billing/", ref=ref)
    with pytest.raises(BadInput, match="git log failed"):
        _run(shop, "billing/", ref="no-such-branch")
    for bad in ("yesterday", "7", "7x", "2026-13-40", ""):
        with pytest.raises(BadInput) as exc:
            parse_since(bad)
        assert exc.value.exit_code == ExitCode.USAGE and "\n" not in str(exc.value)


def test_ask_adds_recent_changes_when_the_question_asks_what_changed(shop):
    repo, _sessions, _settings, service = shop
    answer = service.ask("what changed in the shipping rate computation for a parcel weight?")
    notes = [n for n in answer.notes if n.startswith("Recent changes:")]
    assert notes, answer.notes
    assert f"rate_for (shipping/rates.py:4@{repo.shas['rates'][:7]})" in notes[0]
    plain = service.ask("how is the shipping rate of a parcel computed from its weight?")
    assert not [n for n in plain.notes if n.startswith("Recent changes:")]


def test_slack_changes_command_replies_with_commits(shop, monkeypatch):
    from helpers.slack_harness import Harness, StubService

    repo, sessions, _settings, _service = shop
    service = StubService()
    service.sessions = sessions
    with Harness(service, sessions=sessions) as h:
        h.command("changes billing/ --since 7d", name="ch1")
        r = h.fake.wait_for(lambda: h.fake.responses("ch1"), timeout=30)[0]
        text = r.body["text"]
        assert text.startswith("2 commit(s) touched shop/billing/")
        assert f"{repo.shas['cleanup'][:7]}" in text and f"{repo.shas['refunds'][:7]}" in text
        assert repo.shas["tax_round"][:7] not in text
        assert f"deleted send_invoice (billing/invoice.py:15@{repo.shas['cleanup'][:7]})" in text
        h.command("changes Invoice.tax --since 4w", name="ch2")
        text = h.fake.wait_for(lambda: h.fake.responses("ch2"), timeout=30)[0].body["text"]
        assert repo.shas["tax_round"][:7] in text and repo.shas["refunds"][:7] not in text
        h.command("changes billing/ --since someday", name="ch3")
        text = h.fake.wait_for(lambda: h.fake.responses("ch3"), timeout=30)[0].body["text"]
        assert "--since" in text and "someday" in text
