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


def _indexed(build, name: str, tmp_path, store, embedder, monkeypatch):
    """``build(tmp_path, now)``'s repository indexed as ``name`` with its own SQLite
    database; ``(repo, sessions, settings)``."""
    from common.db import open_database
    from indexer import index_repository

    monkeypatch.setenv("CODERAG_DATABASE_URL", f"sqlite:///{tmp_path / (name + '.db')}")
    repo = build(tmp_path, int(time.time()))
    settings = Settings.from_env()
    sessions = open_database(settings)
    index_repository(repo.root, name=name, settings=settings, store=store, embedder=embedder, sessions=sessions)
    return repo, sessions, settings


@pytest.fixture
def shop(tmp_path, store, local_embedder, settings_env, monkeypatch):
    """The history repo indexed as ``shop`` at its head; ``(repo, sessions, settings, service)``."""
    from bot.answer.service import AnswerService

    repo, sessions, settings = _indexed(build_history_repo, "shop", tmp_path, store, local_embedder, monkeypatch)
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


def test_a_deleted_function_is_cited_at_the_parent_commit_where_it_still_is(shop):
    import subprocess

    repo = shop[0]
    cleanup = _run(shop, "billing/").commits[0]
    deleted = [f for f in cleanup.functions if f.change == "deleted"]
    assert [(f.symbol, f.citation) for f in deleted] == [
        ("send_invoice", f"billing/invoice.py:15@{repo.shas['rates'][:7]}")]
    parent = repo.shas["rates"]  # the commit before cleanup (it touched shipping only)
    assert subprocess.run(["git", "-C", str(repo.root), "rev-parse", f"{repo.shas['cleanup']}^"],
                          capture_output=True, text=True).stdout.strip() == parent
    at_parent = subprocess.run(["git", "-C", str(repo.root), "show", f"{parent}:billing/invoice.py"],
                               capture_output=True, text=True, check=True).stdout.split("\n")
    assert at_parent[15 - 1].startswith("def send_invoice(")
    assert f"billing/invoice.py:15@{parent[:7]}" in cleanup.to_dict()["citations"]
    assert {f["symbol"]: f["commit"] for f in cleanup.to_dict()["functions"]} == {
        "Invoice.tax": cleanup.sha, "send_invoice": parent}


@pytest.fixture
def reordered(tmp_path, store, local_embedder, settings_env, monkeypatch):
    """tests/helpers/history_repo.py's REORDERED history (commit dates out of order) indexed as ``ship``."""
    from helpers.history_repo import build_reordered_repo

    return _indexed(build_reordered_repo, "ship", tmp_path, store, local_embedder, monkeypatch)


def test_commits_of_the_window_behind_an_older_dated_commit_are_kept(reordered):
    """``git log --since`` stops at ``imported`` (committed 20 days ago) and never reaches
    ``rebased`` (committed yesterday); the walk checks every commit's date."""
    import subprocess

    from bot.changes import run_changes
    from indexer.read import parse_since

    repo, sessions, settings = reordered
    git_since = subprocess.run(["git", "-C", str(repo.root), "log", "--since=7.days", "--format=%H"],
                               capture_output=True, text=True, check=True).stdout.split()
    assert repo.shas["rebased"] not in git_since  # the history does trigger git's early stop
    report = run_changes("shipping/rates.py", sessions=sessions, settings=settings, since=parse_since("7d"))
    # the commit date decides the window and the order (by author date, rebased, written
    # 40 days ago, would be out of the window and express would come first)
    assert [c.sha for c in report.commits] == [repo.shas["rebased"], repo.shas["express"]]
    rebased, express = report.commits
    day = lambda days: datetime.fromtimestamp(repo.now - days * DAY, timezone.utc)  # noqa: E731
    assert datetime.fromisoformat(rebased.date) == day(1) and datetime.fromisoformat(rebased.author_date) == day(40)
    assert datetime.fromisoformat(express.date) == day(2)
    assert {(f.symbol, f.change) for f in rebased.functions} == {("rate_for", "modified")}
    assert {(f.symbol, f.change) for f in express.functions} == {("express_rate", "added")}
    from bot.knowledge_text import format_changes

    text = format_changes(report)
    assert "since " in text and "(commit dates)" in text.split("\n")[0]
    assert f"- {repo.shas['rebased'][:7]} {day(1).date().isoformat()} gina:" in text  # the commit date shown
    assert "imported" not in text
    wide = run_changes("shipping/rates.py", sessions=sessions, settings=settings, since=parse_since("4w"))
    assert [c.sha for c in wide.commits] == [repo.shas["rebased"], repo.shas["express"], repo.shas["imported"]]


def test_a_symbol_is_printed_as_a_symbol_and_a_path_as_a_path(shop):
    from bot.knowledge_text import format_changes

    repo = shop[0]
    text = format_changes(_run(shop, "Invoice.tax", since="4w"))
    assert text.startswith("2 commit(s) changed `Invoice.tax` (method, shop/billing/invoice.py) since "), text
    assert "shop/Invoice.tax" not in text
    assert format_changes(_run(shop, "billing/")).startswith("2 commit(s) touched shop/billing/ since ")
    klass = _run(shop, "Invoice", since="4w")  # a class: the commits that changed any of its members
    assert set(_by_label(repo, klass)) == {"cleanup", "refunds", "tax_round"}
    assert format_changes(klass).startswith("3 commit(s) changed `Invoice` (class, shop/billing/invoice.py) since ")


def test_minutes_are_a_window_for_changes_and_stats_alike(shop):
    from bot.querylog.stats import parse_since as stats_since
    from indexer.read import parse_since

    now = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
    assert parse_since("30m", now) == stats_since("30m", now=now) == datetime(2026, 12, 1, 11, 30, tzinfo=timezone.utc)
    assert parse_since("2026-11-30") == datetime(2026, 11, 30, tzinfo=timezone.utc)
    assert _run(shop, "billing/", since="30m").commits == []  # the newest commit is a day old
    assert len(_run(shop, "billing/", since="2880m").commits) == 1  # two days: cleanup only
    for parse in (parse_since, stats_since):
        with pytest.raises(BadInput) as exc:
            parse("lastweek")
        assert str(exc.value) == ("--since: 'lastweek' is no time window; use 30m, 24h, 7d, 2w (minutes, hours, "
                                  "days, weeks ago), today, yesterday, this/last week|month (UTC calendar) or an "
                                  "ISO date (2026-11-30) or date-time")


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
    with pytest.raises(BadInput, match="no-such-branch. is no branch, tag or commit of this repository"):
        _run(shop, "billing/", ref="no-such-branch")
    for bad in ("the day before", "7", "7x", "2026-13-40", ""):
        with pytest.raises(BadInput) as exc:
            parse_since(bad)
        assert exc.value.exit_code == ExitCode.USAGE and "\n" not in str(exc.value)


def test_ask_adds_recent_changes_when_the_question_asks_what_changed(shop):
    repo, _sessions, _settings, service = shop
    answer = service.ask("what changed in the shipping rate computation for a parcel weight?")
    notes = [n for n in answer.notes if n.startswith("Recent changes:")]
    assert notes, answer.notes
    assert f"rate_for (shipping/rates.py:4@{repo.shas['rates'][:7]})" in notes[0]
    # what is known, exactly: the commits touched the file; which of them changed the function's lines
    assert "touched shop/shipping/rates.py" in notes[0] and "shop/rate_for" not in notes[0]
    assert f"`rate_for` (shop/shipping/rates.py): its lines changed in {repo.shas['rates'][:7]}." in notes[0]
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
        # a deleted function is cited where it still is: in the parent commit
        assert f"deleted send_invoice (billing/invoice.py:15@{repo.shas['rates'][:7]})" in text
        h.command("changes Invoice.tax --since 4w", name="ch2")
        text = h.fake.wait_for(lambda: h.fake.responses("ch2"), timeout=30)[0].body["text"]
        assert repo.shas["tax_round"][:7] in text and repo.shas["refunds"][:7] not in text
        h.command("changes billing/ --since someday", name="ch3")
        text = h.fake.wait_for(lambda: h.fake.responses("ch3"), timeout=30)[0].body["text"]
        assert "--since" in text and "someday" in text


def test_the_note_tells_a_commit_that_changed_a_function_from_one_that_touched_only_its_file(shop):
    from bot.knowledge_text import format_changes
    from indexer.read import changes_report, parse_since

    repo, sessions, settings, _service = shop
    cleanup, refunds = repo.shas["cleanup"][:7], repo.shas["refunds"][:7]

    def note_for(symbol: str, start: int, end: int, since: str) -> str:
        report = changes_report(sessions, settings, "q", since=parse_since(since),
                                locations=[("shop", "billing/invoice.py", start, end, symbol)])
        return format_changes(report)

    # this week: cleanup changed Invoice.tax; refunds changed Invoice.total and refund, in the same file
    week = note_for("Invoice.tax", 11, 12, "7d")
    assert week.startswith("2 commit(s) touched shop/billing/invoice.py (the files of the closest code) since "), week
    assert f"`Invoice.tax` (shop/billing/invoice.py): its lines changed in {cleanup}; {refunds} touched only its file." \
        in week
    assert f"`Invoice.total` (shop/billing/invoice.py): no commit changed its lines; {cleanup} touched only its file." \
        in note_for("Invoice.total", 8, 9, "2d")


def test_who_touched_something_recently_is_answered_from_the_commits(shop):
    repo, _sessions, _settings, service = shop
    answer = service.ask("Who touched the shipping rate logic recently?")
    assert not answer.no_coverage, answer.text
    notes = [n for n in answer.notes if n.startswith("Recent changes:")]
    assert notes, answer.notes
    authors = notes[0].split("\n")[0]
    assert " by " in authors and f"dave ({repo.shas['rates'][:7]})" in authors, authors
    assert f"- {repo.shas['rates'][:7]} " in notes[0] and "dave: rates: dave's change" in notes[0]
    # the words that only ask who and when ("changed", "past week") or point at "the logic"
    # are no gap in the sources: the commits answer them
    week = service.ask("who changed the refund logic in the past week?")
    assert not week.no_coverage, week.text
    week_notes = [n for n in week.notes if n.startswith("Recent changes:")]
    assert week_notes and f"carol ({repo.shas['refunds'][:7]})" in week_notes[0].split("\n")[0], week_notes


@pytest.fixture
def spec_shop(tmp_path, store, local_embedder, settings_env, monkeypatch):
    """tests/helpers/history_repo.py's SPEC_HISTORY (an OpenAPI spec's operations edited
    and removed) indexed as ``api``; ``(repo, sessions, settings)``."""
    from helpers.history_repo import SPEC_HISTORY

    def build(tmp, now):
        return build_history_repo(tmp, now, name="api", history=SPEC_HISTORY)

    return _indexed(build, "api", tmp_path, store, local_embedder, monkeypatch)


def test_a_spec_file_lists_the_operations_each_commit_changed(spec_shop):
    from bot.changes import run_changes
    from indexer.read import parse_since

    repo, sessions, settings = spec_shop
    report = run_changes("api/openapi.yaml", sessions=sessions, settings=settings, since=parse_since("7d"))
    assert report.kind == "path"
    assert [c.sha for c in report.commits] == [repo.shas[k] for k in ("drop_cancel", "version", "summary")]
    drop, version, summary = report.commits
    # the edited operation: cited at its first line in the commit that edited it
    assert [(f.symbol, f.change, f.line, f.commit) for f in summary.functions] == [
        ("GET /orders/{id}", "modified", 43, repo.shas["summary"])]
    assert f"api/openapi.yaml:43@{repo.shas['summary'][:7]}" in summary.to_dict()["citations"]
    # info.version is in no operation
    assert version.functions == []
    # the removed operation: deleted, cited where it last was, in the parent commit
    assert [(f.path, f.symbol, f.change, f.line, f.commit) for f in drop.functions] == [
        ("api/openapi.yaml", "DELETE /orders/{id}", "deleted", 55, repo.shas["version"])]
    from bot.knowledge_text import format_changes

    text = format_changes(report)
    assert f"deleted DELETE /orders/{{id}} (api/openapi.yaml:55@{repo.shas['version'][:7]})" in text, text


def test_the_note_says_which_commit_changed_an_operations_lines(spec_shop):
    """The ask path: a question's top hit is the operation chunk (symbol ``GET /orders/{id}``)."""
    from types import SimpleNamespace

    from bot.changes import recent_changes_note

    repo, sessions, settings = spec_shop
    summary, version, drop = (repo.shas[k][:7] for k in ("summary", "version", "drop_cancel"))
    hit = lambda symbol, start, end: SimpleNamespace(chunk=SimpleNamespace(  # noqa: E731
        repo="api", path="api/openapi.yaml", start_line=start, end_line=end, symbol=symbol))
    note = recent_changes_note(sessions, settings, "what changed in the order lookup endpoint this week?",
                               [hit("GET /orders/{id}", 43, 54), hit("GET /orders", 7, 20)], since="7d")
    assert note.startswith("Recent changes: 3 commit(s) touched api/api/openapi.yaml"), note
    assert f"`GET /orders/{{id}}` (api/api/openapi.yaml): its lines changed in {summary}; " \
           f"{drop}, {version} touched only its file." in note, note
    assert f"`GET /orders` (api/api/openapi.yaml): no commit changed its lines; " \
           f"{drop}, {version}, {summary} touched only its file." in note, note


def test_an_operation_label_goes_the_question_route_and_finds_its_operation(spec_shop, store, local_embedder):
    """``changes "GET /orders/{id}"``: no call-graph symbol has that name, so its search
    hits are read, the operation chunk first, and its own commits are said."""
    from bot.answer.service import AnswerService
    from bot.changes import run_changes
    from bot.knowledge_text import format_changes
    from indexer.read import parse_since

    repo, sessions, settings = spec_shop
    service = AnswerService(store, local_embedder, sessions=sessions, settings=load())
    report = run_changes("GET /orders/{id}", sessions=sessions, settings=settings, since=parse_since("7d"),
                         retriever_factory=lambda: service.retriever)
    assert report.kind == "question"
    assert "GET /orders/{id}" in report.targets[0]["symbols"], report.targets
    assert f"`GET /orders/{{id}}` (api/api/openapi.yaml): its lines changed in {repo.shas['summary'][:7]}" \
        in format_changes(report)


def test_the_definitions_of_a_file_no_commit_touched_share_one_line(shop):
    from bot.knowledge_text import format_changes
    from indexer.read import changes_report, parse_since

    repo, sessions, settings, _service = shop
    report = changes_report(sessions, settings, "q", since=parse_since("2d"),
                            locations=[("shop", "billing/invoice.py", 11, 12, "Invoice.tax"),
                                       ("shop", "shipping/rates.py", 4, 8, "rate_for"),
                                       ("shop", "shipping/rates.py", 10, 12, "free_shipping")])
    lines = format_changes(report).splitlines()
    assert "`rate_for`, `free_shipping` (shop/shipping/rates.py): no commit touched the file." in lines, lines
    assert f"`Invoice.tax` (shop/billing/invoice.py): its lines changed in {repo.shas['cleanup'][:7]}." in lines, lines
    assert not any(line.startswith("`rate_for` ") for line in lines)


def test_a_question_naming_a_symbol_reads_that_symbols_commits(shop):
    repo = shop[0]
    named = _run(shop, "who changed Invoice.tax recently?", since="4w")
    direct = _run(shop, "Invoice.tax", since="4w")
    assert named.kind == "symbol" and named.query == "who changed Invoice.tax recently?"
    assert [c.sha for c in named.commits] == [c.sha for c in direct.commits] == \
        [repo.shas["cleanup"], repo.shas["tax_round"]]


def test_a_question_naming_no_code_reads_the_whole_repository(shop):
    from bot.changes import topic_words
    from bot.knowledge_text import format_changes

    repo = shop[0]
    assert topic_words("what has changed today?") == [] and topic_words("what changed in billing?") == ["billing"]
    report = _run(shop, "what has changed recently?", since="4w")
    assert report.kind == "path" and report.total == 4
    assert [c.sha for c in report.commits] == [repo.shas[k] for k in ("cleanup", "rates", "refunds", "tax_round")]
    assert format_changes(report).startswith("4 commit(s) touched shop/ since ")
