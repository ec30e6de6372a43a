"""Who knows this: CODEOWNERS, blame and history on a repository with known authorship.

Fixture (tests/helpers/knowledge_repo.py): Alice wrote most of the service (once under
an old identity that ``.mailmap`` merges), Bob and Carol made smaller changes, a bot
added 60 lines and "Reformat with black" by Erin rewrote every quoted line.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from helpers.knowledge_repo import build_knowledge_repo
from common.settings import Settings, load
from indexer import on_repo_indexed
from indexer.read import who
from indexer.experts.codeowners import owners_of, parse_codeowners
from indexer.experts.models import ExpertChange

ALICE, BOB = "alice@example.com", "bob@example.com"


@pytest.fixture
def indexed(db_env, tmp_path):
    settings, sessions = db_env
    k = build_knowledge_repo(tmp_path, int(time.time()))
    on_repo_indexed(sessions, settings, "payments", k.root, k.shas["small"])
    return settings, sessions, k


def test_codeowners_last_match_wins_and_gitlab_sections():
    rules = parse_codeowners("* @all\n/src/ @src-team\n/src/payments/ @pay\n*.md @docs\n/src/legacy.py\n"
                             "[Security][2] @sec\n/src/payments/keys.py\n")
    assert [o for _, o in owners_of(rules, "src/payments/refund.py")] == ["@pay"]
    assert [o for _, o in owners_of(rules, "src/other.py")] == ["@src-team"]
    assert [o for _, o in owners_of(rules, "src/payments/README.md")] == ["@docs"]
    assert owners_of(rules, "src/legacy.py") == []  # a rule with no owners un-owns the path
    assert sorted(o for _, o in owners_of(rules, "src/payments/keys.py")) == ["@pay", "@sec"]
    assert [o for _, o in owners_of(rules, "src/payments/")] == ["@pay"]


def test_main_author_first_bot_and_reformat_ignored_mailmap_merged(indexed):
    settings, sessions, k = indexed
    res = who(sessions, settings, "src/payments/service.py")
    assert res.kind == "path"
    owners = [e for e in res.experts if e.owner]
    people = [e for e in res.experts if not e.owner]
    assert [e.who for e in owners] == ["@alice"] and res.experts[0].owner
    assert people[0].email == ALICE, [(e.who, e.score) for e in people]
    emails = {e.email for e in people}
    assert "erin@example.com" not in emails  # the reformatting commit
    assert not any("bot" in e for e in emails)
    assert "a@old-laptop" not in emails  # merged into Alice by .mailmap
    assert any(r.startswith("wrote ") and "% of the current lines" in r for r in people[0].reasons)
    with sessions() as s:
        excluded = {c.commit: c.excluded for c in s.query(ExpertChange).filter(ExpertChange.excluded != "")}
    assert excluded == {k.shas["bot"]: "bot", k.shas["reformat"]: "reformat"}


def test_codeowners_outrank_history_where_both_exist(indexed):
    settings, sessions, _ = indexed
    res = who(sessions, settings, "src/payments/api.py")
    assert [e.who for e in res.experts[:2]] == ["@payments-team", "dave@example.com"]
    assert res.experts[0].reasons == ["owns /src/payments/api.py in CODEOWNERS"]
    assert res.experts[2].email == ALICE  # the author comes after the owners


def test_symbol_blame_is_limited_to_its_lines(indexed):
    settings, sessions, _ = indexed
    res = who(sessions, settings, "refund")
    assert res.kind == "symbol" and res.path == "src/payments/service.py" and res.start_line
    alice = next(e for e in res.experts if e.email == ALICE)
    bob = next(e for e in res.experts if e.email == BOB)
    share = lambda e: int(next(r for r in e.reasons if r.startswith("wrote")).split()[1].rstrip("%"))  # noqa: E731
    assert share(alice) > share(bob) > 0
    assert "`refund()`" in alice.reasons[0]
    assert who(sessions, settings, "how does a refund work?") is None  # a question: the caller retrieves


def test_directory_and_chat_mapping(indexed, monkeypatch):
    _, sessions, _ = indexed
    monkeypatch.setenv("CODERAG_EXPERTS_CHAT_USERS", json.dumps({ALICE: "U0ALICE"}))
    settings = Settings.from_env()
    res = who(sessions, settings, "src/payments/")
    alice = next(e for e in res.experts if e.email == ALICE)
    assert alice.chat_user == "U0ALICE"
    from bot.knowledge_text import format_who

    assert "<@U0ALICE>" in format_who(res, mention="slack")


def test_push_adds_only_new_commits(indexed):
    from helpers.knowledge_repo import _commit

    settings, sessions, k = indexed
    with sessions() as s:
        before = s.query(ExpertChange).count()
    sha = _commit(k.root, "Frank New", "frank@example.com", "cli: help text", int(time.time()),
                  {"src/payments/cli.py": (k.root / "src/payments/cli.py").read_text() + "# help\n"})
    on_repo_indexed(sessions, settings, "payments", k.root, sha, changed_paths=["src/payments/cli.py"])
    with sessions() as s:
        assert s.query(ExpertChange).count() == before + 1
    assert any(e.email == "frank@example.com" for e in who(sessions, settings, "src/payments/cli.py").experts)


def test_who_cli_json(indexed):
    settings, _, _ = indexed
    e = {**os.environ, "CODERAG_HOME": str(settings.home)}
    res = subprocess.run([sys.executable, "-m", "bot.cli", "who", "src/payments/service.py", "--json"], env=e,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["experts"][0]["who"] == "@alice" and data["experts"][1]["email"] == ALICE
    res = subprocess.run([sys.executable, "-m", "bot.cli", "who", "  "], env=e, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode != 0 and "coderag: error:" in res.stderr


def test_question_mode_lists_codeowners_owners_first(indexed):
    # a question's experts merge those of its top locations: an owner of the second
    # location still comes before an author with more weight on the first
    from indexer.read import experts_for_locations

    settings, sessions, _ = indexed
    res = experts_for_locations(sessions, settings, "how are refunds sent?",
                                [("payments", "src/payments/service.py", 0, 0, ""),
                                 ("payments", "src/payments/api.py", 0, 0, "")])
    owners = [e for e in res.experts if e.owner]
    assert owners and res.experts[:len(owners)] == owners
    assert any(not e.owner for e in res.experts)


def test_who_with_a_path_that_is_not_indexed_names_the_closest_paths(indexed):
    """A one-word path (a `/` or a file extension) that is neither an indexed file, folder
    nor symbol is a usage error naming the closest indexed paths, never a question search;
    symbols and real questions still work."""
    from common.errors import BadInput, ExitCode

    from bot.knowledge import chat_reply, run_who

    settings, sessions, _ = indexed

    def no_search():
        raise AssertionError("fell back to question search")

    def run(query, **kw):
        return run_who(query, sessions=sessions, settings=settings, retriever_factory=no_search, **kw)

    cases = {"src/payments/servce.py": "src/payments/service.py", "payments/service.py": "src/payments/service.py",
             "src/paymnts/": "src/payments/", "servce.py": "src/payments/service.py"}
    for query, closest in cases.items():
        with pytest.raises(BadInput) as info:
            run(query)
        message = str(info.value)
        assert message.startswith(f"no indexed file or folder {query} in payments; closest: ")
        assert closest in message.split("closest: ")[1].split(", ") and "\n" not in message
        assert info.value.exit_code == ExitCode.USAGE
    with pytest.raises(BadInput, match=r"^no indexed file or folder zzz/qqq\.py in payments; give an indexed path"):
        run("zzz/qqq.py")
    assert run("RefundService.run").kind == "symbol" and run("src/payments/service.py").kind == "path"
    asked = []
    run_who("where is the refund latency measured", sessions=sessions, settings=settings,
            retriever_factory=lambda: asked.append(1) or _NoHits())
    assert asked == [1]  # a question still goes to search
    # in chat: the same line, and a channel never sees the paths of a repo it may not read
    assert chat_reply(_Service(sessions), "who", "src/payments/servce.py").startswith(
        "⚠️ no indexed file or folder src/payments/servce.py in payments; closest: src/payments/service.py")
    hidden = chat_reply(_Service(sessions), "who", "src/payments/servce.py", allowed={"other"})
    assert hidden.startswith("⚠️ no indexed file or folder") and "src/payments/service.py" not in hidden


def test_who_cli_path_not_indexed_is_a_usage_error(indexed):
    settings, _, _ = indexed
    e = {**os.environ, "CODERAG_HOME": str(settings.home)}
    res = subprocess.run([sys.executable, "-m", "bot.cli", "who", "src/payments/servce.py"], env=e,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    # (on PostgreSQL, psycopg may add a ResourceWarning about the pooled connection at exit)
    assert [ln for ln in res.stderr.splitlines() if ln.startswith("coderag:")] == [
        "coderag: error: no indexed file or folder src/payments/servce.py in payments; "
        "closest: src/payments/service.py"], res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""


def test_who_and_drift_with_an_unknown_repo_give_the_unknown_repo_error(indexed):
    """The same one line and exit code (4) as ``ask``/``impact``/``search --repo``."""
    settings, _, _ = indexed
    e = {**os.environ, "CODERAG_HOME": str(settings.home)}
    for argv in (["who", "src/payments/service.py", "--repo", "nosuchrepo"], ["drift", "nosuchrepo"]):
        res = subprocess.run([sys.executable, "-m", "bot.cli", *argv], env=e, capture_output=True, text=True,
                             timeout=120)
        assert res.returncode == 4, (argv, res.stderr)
        errors = [ln for ln in res.stderr.splitlines() if ln.startswith("coderag:")]
        assert len(errors) == 1 and "nosuchrepo (indexed: payments)" in errors[0], res.stderr
    ok = subprocess.run([sys.executable, "-m", "bot.cli", "who", "src/payments/service.py", "--repo", "payments"],
                        env=e, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr


class _NoHits:
    def search(self, *a, **kw):
        class R:
            hits = []
        return R()


class _Service:  # chat_reply only reads these three attributes of the AnswerService
    def __init__(self, sessions):
        self.sessions, self.retriever, self.settings = sessions, None, load()


def test_chat_commands_parse_and_reply(indexed):
    from bot.chat.commands import parse
    from bot.knowledge import chat_reply

    assert parse("drift OPS").name == "drift" and parse("drift").needs_work
    assert parse("who").error and parse("who src/x.py").arg == "src/x.py"
    settings, sessions, _ = indexed

    class Service:  # chat_reply only reads these three attributes of the AnswerService
        def __init__(self):
            self.sessions, self.retriever, self.settings = sessions, None, load()

    text = chat_reply(Service(), "who", "src/payments/api.py")
    assert text.splitlines()[1].startswith("1. @payments-team — owns /src/payments/api.py in CODEOWNERS")
    text = chat_reply(Service(), "drift", "")
    assert "5 stale" in text and "--max-conn" in text
    assert chat_reply(Service(), "drift", "payments", allowed={"other"}).startswith("⚠️ no checked docs")


def test_slash_commands_who_and_drift_over_real_http(indexed):
    """``/coderag who`` and ``/coderag drift`` through the real Bolt app and slack_sdk."""
    from helpers.slack_harness import Harness, StubService

    _, sessions, k = indexed
    with Harness(StubService(), sessions=sessions) as h:
        h.command("who src/payments/api.py", name="w")
        r = h.fake.wait_for(lambda: h.fake.responses("w"), timeout=60)[0]
        assert "1. @payments-team — owns /src/payments/api.py in CODEOWNERS" in r.body["text"]
        h.command("drift", name="d")
        r = h.fake.wait_for(lambda: h.fake.responses("d"), timeout=60)[0]
        assert "5 stale" in r.body["text"] and k.shas["flag"][:7] in r.body["text"]
        help_reply = h.command("help", name="h")[0]  # answered in the ack itself
        assert "/coderag drift [space]" in help_reply.text and "/coderag who" in help_reply.text
    from bot.teams.cards import help_text

    assert "@coderag who <path|symbol|question>" in help_text()


def test_teams_who_command_over_real_http(indexed):
    """``@coderag who …`` through the real Teams front end and its connector client."""
    from helpers.teams_harness import Harness, StubService

    _, sessions, _ = indexed
    with Harness(StubService(), sessions=sessions) as h:
        r = h.post(h.activity("who src/payments/api.py"))
        assert r.status_code in (200, 201, 202), r.text
        (msg,) = h.wait_messages(1, timeout=60)
        assert "1. @payments-team — owns /src/payments/api.py in CODEOWNERS" in msg.body["text"]


def test_who_with_a_symbol_that_is_not_indexed_names_the_closest_symbols(indexed):
    """A token written as code (``Class.method``, ``snake_case``, ``CamelCase``) or any
    one word that no definition has is the unknown-symbol error (exit 7) with the closest
    symbols, never a question search; a question's answer says it is a guess and what it
    rests on."""
    from common.errors import ExitCode

    from bot.impact import UnknownSymbol
    from bot.knowledge import chat_reply, run_who
    from bot.knowledge_text import format_who

    settings, sessions, k = indexed
    # the call graph an index run saves (the fixture only ran the knowledge hook)
    from indexer.graph import extract_file
    from indexer.graph.sql_store import save_repo_graph

    files = subprocess.run(["git", "-C", str(k.root), "ls-files"], capture_output=True, text=True).stdout.split()
    facts = [f for p in files if (f := extract_file(p, (k.root / p).read_text())) is not None]
    save_repo_graph(sessions, "payments", k.shas["small"], facts)

    def no_search():
        raise AssertionError("fell back to question search")

    with pytest.raises(UnknownSymbol) as info:
        run_who("RefundServce.run", sessions=sessions, settings=settings, retriever_factory=no_search)
    assert str(info.value).startswith("no indexed symbol RefundServce.run in payments; closest: ")
    assert "RefundService.run" in str(info.value) and info.value.exit_code == ExitCode.UNKNOWN_SYMBOL
    with pytest.raises(UnknownSymbol, match="^no indexed symbol nosuch_symbol_xyz in payments"):
        run_who("nosuch_symbol_xyz", sessions=sessions, settings=settings, retriever_factory=no_search)
    # one plain word is a name too: no guess from a question search for a made-up word
    with pytest.raises(UnknownSymbol, match='^no indexed symbol nosuchsymbolxyz in payments.*who "who knows '):
        run_who("nosuchsymbolxyz", sessions=sessions, settings=settings, retriever_factory=no_search)
    assert chat_reply(_Service(sessions), "who", "RefundServce.run").startswith("⚠️ no indexed symbol RefundServce.run")
    e = {**os.environ, "CODERAG_HOME": str(settings.home)}
    res = subprocess.run([sys.executable, "-m", "bot.cli", "who", "nosuch_symbol_xyz"], env=e, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == ExitCode.UNKNOWN_SYMBOL and "no indexed symbol nosuch_symbol_xyz" in res.stderr
    # question mode: labelled a guess, naming the code it is anchored on
    from indexer.read import experts_for_locations

    guess = experts_for_locations(sessions, settings, "how are refunds sent?",
                                  [("payments", "src/payments/service.py", 1, 20, "RefundService.run()")])
    text = format_who(guess)
    assert text.startswith("A guess: no file or symbol was named, so these are the people who know the code "
                           "closest to the question, RefundService.run() (payments: src/payments/service.py:1-20):")


def test_thin_evidence_is_said_to_be_no_clear_ownership(db_env, tmp_path):
    """No CODEOWNERS, one commit and two lines each: ``who`` names the closest people
    under "Nobody has clear ownership"; once one person wrote enough of the current
    lines, the same question has an owner."""
    from helpers.gitrepo import commit_files, head_sha, make_git_repo
    from bot.knowledge_text import format_who
    from indexer.experts.service import CLEAR_LINES, experts_for

    settings, sessions = db_env
    root = make_git_repo(tmp_path, {"tool/run.py": "def run():\n    return 1\n"}, name="tool")
    on_repo_indexed(sessions, settings, "tool", root, head_sha(root))
    thin = experts_for(sessions, settings, "tool", "tool/run.py")
    assert thin.experts and not thin.clear and thin.to_dict()["clear"] is False
    assert "Nobody has clear ownership" in format_who(thin)
    body = "def run():\n" + "".join(f"    x{i} = {i}\n" for i in range(CLEAR_LINES + 2)) + "    return 1\n"
    commit_files(root, {"tool/run.py": body}, "grow run")
    on_repo_indexed(sessions, settings, "tool", root, head_sha(root))
    grown = experts_for(sessions, settings, "tool", "tool/run.py")
    assert grown.clear and grown.experts[0].lines >= CLEAR_LINES
    assert "Nobody has clear ownership" not in format_who(grown)
