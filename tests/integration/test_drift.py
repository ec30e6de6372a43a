"""Runbook <-> code drift on real Git repositories and a real SQL database.

The fixture (tests/helpers/knowledge_repo.py) has a runbook with 12 references: 5 the
history made stale (a renamed flag, a removed env var, a moved endpoint, a deleted
function, a renamed metric), 6 still valid and 1 belonging to ``git``.
"""
from __future__ import annotations

import json
import time

import pytest

from helpers.knowledge_repo import build_knowledge_repo
from common.settings import Settings, load
from indexer import on_docs_indexed, on_repo_indexed
from indexer.read import drift_counts, drift_report
from indexer.drift.extract import extract_references, normalize_route

STALE = {  # ref as written -> (fixture step that removed it, expected new name)
    "--max-conn": ("flag", "--max-connections"),
    "PAYMENTS_RETRY_LIMIT": ("env", ""),
    "POST /v1/refunds": ("endpoint", "POST /v2/refunds"),
    "refund_legacy()": ("function", ""),
    "payments_refund_errors_total": ("metric", "payments_refund_failures_total"),
}
VALID = {"--dry-run", "PAYMENTS_DB_URL", "GET /v1/health", "refund()", "payments_refund_seconds",
         "make migrate", "scripts/rotate.sh"}


@pytest.fixture
def repo(tmp_path):
    return build_knowledge_repo(tmp_path, int(time.time()))


# --------------------------------------------------------------------------- extraction


def test_each_pattern_kind_is_extracted_with_its_section_and_line():
    text = ("# Ops\n\n## Deploy\n\nRun `api serve --max-conn=5` then `make deploy`.\n"
            "Set the environment variable `API_TOKEN`; check $API_REGION.\n"
            "`POST /v1/orders/{id}` and the metric `orders_total`, alert `OrdersStuck`.\n"
            "See `deploy/app.yaml`, `retry.backoff_ms`, `Orders.cancel()`.\n\n"
            "## Shell\n\n```bash\nexport API_MODE=fast\ngit pull --rebase\n```\n")
    refs = {(r.kind, r.key): r for r in extract_references("ops.md", text)}
    assert ("flag", "max-conn") in refs and refs[("flag", "max-conn")].line == 5
    assert ("target", "deploy") in refs
    assert ("env", "API_TOKEN") in refs and ("env", "API_REGION") in refs and ("env", "API_MODE") in refs
    assert ("endpoint", "POST /v1/orders/{}") in refs
    assert ("metric", "orders_total") in refs and ("metric", "OrdersStuck") in refs
    assert ("path", "deploy/app.yaml") in refs and ("config", "retry.backoff_ms") in refs
    assert ("symbol", "Orders.cancel") in refs
    assert refs[("flag", "rebase")].external and not refs[("flag", "max-conn")].external
    assert refs[("env", "API_MODE")].section == "Ops > Shell"
    assert refs[("flag", "max-conn")].section == "Ops > Deploy"


def test_rst_roles_and_python_imports_through_tree_sitter():
    text = ("Title\n=====\n\nSection\n-------\n\nUse :class:`~pkg.Session` and :meth:`.Query.get`.\n\n"
            ".. code-block:: python\n\n    from pkg.orm import make_session\n    import os\n"
            "    os.environ[\"PKG_DEBUG\"]\n\nAfter.\n")
    refs = {(r.kind, r.key) for r in extract_references("doc.rst", text)}
    assert {("symbol", "pkg.Session"), ("symbol", "Query.get"), ("symbol", "pkg.orm.make_session"),
            ("env", "PKG_DEBUG")} <= refs


def test_routes_are_compared_with_their_parameters_blanked():
    assert normalize_route("/v1/refunds/{id}") == normalize_route("/v1/refunds/:id") == "/v1/refunds/{}"
    assert normalize_route("/v1/refunds/<int:id>/") == "/v1/refunds/{}"
    assert normalize_route("/v1/refunds?x=1") == "/v1/refunds"


# --------------------------------------------------------------------------- resolution


def test_drift_finds_exactly_the_five_stale_references_with_their_commits(db_env, repo):
    settings, sessions = db_env
    out = on_repo_indexed(sessions, settings, "payments", repo.root, repo.shas["small"])
    assert out["drift"]["docs"] == 1
    report = drift_report(sessions)
    stale = {r["ref"]: r for r in report["stale"]}
    assert set(stale) == set(STALE)
    for ref, (step, new) in STALE.items():
        assert stale[ref]["removed_commit"] == repo.shas[step], ref
        assert stale[ref]["new_name"] == new, ref
        if new:
            assert stale[ref]["new_evidence"].endswith("@" + repo.shas["small"][:7])
    from indexer.drift.models import DocRef
    from sqlalchemy import select

    with sessions() as s:
        rows = {r.ref: r for r in s.execute(select(DocRef)).scalars()}
    for ref in VALID:
        assert rows[ref].status == "ok", (ref, rows[ref].note)
        assert rows[ref].evidence.endswith("@" + repo.shas["small"][:7])
    assert rows["--rebase"].status == "unknown"
    assert report["counts"] == {"found": 13, "ok": 7, "stale": 5, "unknown": 1}
    # grouped per doc and section
    sec = report["sources"][0]["docs"][0]["sections"]
    assert {s["section"] for s in sec} == {"Payments runbook > Restart the API",
                                           "Payments runbook > When refunds fail"}
    assert drift_counts(sessions)["payments"]["stale"] == 5


def test_a_push_rechecks_changed_docs_and_code(db_env, repo):
    from helpers.knowledge_repo import _commit

    settings, sessions = db_env
    on_repo_indexed(sessions, settings, "payments", repo.root, repo.shas["small"])
    text = (repo.root / "docs/runbook.md").read_text().replace("--max-conn 50", "--max-connections 50")
    sha = _commit(repo.root, "Bob Builder", "bob@example.com", "runbook: new flag", int(time.time()),
                  {"docs/runbook.md": text})
    out = on_repo_indexed(sessions, settings, "payments", repo.root, sha, changed_paths=["docs/runbook.md"])
    # refs already known to be missing are dated again from the new commit only
    assert out["drift"]["history_scans"] == [{"repo": "payments", "refs": 4, "since": repo.shas["small"][:12]}]
    report = drift_report(sessions)
    assert {r["ref"] for r in report["stale"]} == set(STALE) - {"--max-conn"}
    kept = {r["ref"]: (r["removed_commit"], r["new_name"]) for r in report["stale"]}
    assert kept["POST /v1/refunds"] == (repo.shas["endpoint"], "POST /v2/refunds")
    assert kept["refund_legacy()"] == (repo.shas["function"], "")
    # code change only: the metric comes back, so its reference is ok again
    code = (repo.root / "src/payments/metrics.py").read_text() + 'OLD = Counter("payments_refund_errors_total", "x")\n'
    sha2 = _commit(repo.root, "Bob Builder", "bob@example.com", "metrics: old name back", int(time.time()),
                   {"src/payments/metrics.py": code})
    on_repo_indexed(sessions, settings, "payments", repo.root, sha2, changed_paths=["src/payments/metrics.py"])
    assert {r["ref"] for r in drift_report(sessions)["stale"]} == set(STALE) - {"--max-conn", "payments_refund_errors_total"}


def test_confluence_pages_are_checked_against_the_linked_repos(db_env, repo, monkeypatch):
    settings, sessions = db_env
    on_repo_indexed(sessions, settings, "payments", repo.root, repo.shas["small"])
    page = "# On-call\n\n## Steps\n\nRestart with `payments-api serve --max-conn 9`; then `GET /v1/health`.\n"
    # a space linked to no repository is checked against none (never every indexed repo)
    on_docs_indexed(sessions, settings, "OPS", [("confluence/OPS/1-on-call", page, "On-call", "https://wiki/x/1")])
    rep = drift_report(sessions, "OPS")
    assert rep["counts"]["stale"] == 0 and rep["counts"]["unknown"] == rep["counts"]["found"] == 2
    monkeypatch.setenv("CODERAG_DRIFT_SPACE_REPOS", json.dumps({"OPS": ["payments"]}))
    settings = Settings.from_env()
    on_docs_indexed(sessions, settings, "OPS", [("confluence/OPS/1-on-call", page, "On-call", "https://wiki/x/1")])
    rep = drift_report(sessions, "OPS")
    assert [(r["ref"], r["removed_commit"], r["url"]) for r in rep["stale"]] == [
        ("--max-conn", repo.shas["flag"], "https://wiki/x/1")]
    assert rep["counts"]["ok"] == 1
    # a space linked to no indexed repo cannot be checked: unknown, never stale
    monkeypatch.setenv("CODERAG_DRIFT_SPACE_REPOS", json.dumps({"OPS": ["other-repo"]}))
    on_docs_indexed(sessions, Settings.from_env(), "OPS", [("confluence/OPS/1-on-call", page, "On-call", "")])
    rep = drift_report(sessions, "OPS")
    assert rep["counts"]["stale"] == 0 and rep["counts"]["unknown"] == rep["counts"]["found"] == 2
    # a deleted page leaves the report
    on_docs_indexed(sessions, settings, "OPS", [], deleted=["confluence/OPS/1-on-call"])
    with pytest.raises(Exception, match="no checked docs"):
        drift_report(sessions, "OPS")


def test_answer_notes_flag_a_cited_stale_section(db_env, repo):
    from bot.answer.extractive import Citation
    from bot.answer.service import Answer
    from bot.knowledge import answer_notes

    settings, sessions = db_env
    on_repo_indexed(sessions, settings, "payments", repo.root, repo.shas["small"])
    cites = [Citation("payments", "docs/runbook.md", 3, 8, repo.shas["small"], "Restart the API", None),
             Citation("payments", "src/payments/api.py", 1, 6, repo.shas["small"], "", None)]
    ans = Answer(question="how do I restart the API?", text="", citations=cites, hits=[], no_coverage=False,
                 model="extractive")
    notes = answer_notes(sessions, ans, settings=settings)
    flag = next(n for n in notes if "--max-conn" in n)
    assert flag.startswith("[1] this step names `--max-conn`, which the code dropped in " + repo.shas["flag"][:7])
    assert "`--max-connections` (src/payments/cli.py:" in flag
    assert any(n.startswith("[1]") and "POST /v1/refunds" in n for n in notes)
    assert "Owners: [2] @payments-team dave@example.com" in notes


def test_drift_cli_json_and_text(db_env, repo, tmp_path):
    import os
    import subprocess
    import sys

    settings, sessions = db_env
    on_repo_indexed(sessions, settings, "payments", repo.root, repo.shas["small"])
    e = {**os.environ, "CODERAG_HOME": str(settings.home)}
    res = subprocess.run([sys.executable, "-m", "bot.cli", "drift", "--json"], env=e, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert {r["ref"]: r["removed_commit"] for r in data["stale"]} == {k: repo.shas[v[0]] for k, v in STALE.items()}
    res = subprocess.run([sys.executable, "-m", "bot.cli", "drift", "payments"], env=e, capture_output=True,
                         text=True, timeout=120)
    assert "5 stale" in res.stdout and "now `--max-connections`" in res.stdout
    res = subprocess.run([sys.executable, "-m", "bot.cli", "drift", "nope"], env=e, capture_output=True,
                         text=True, timeout=120)
    # an unknown name is the unknown-repo error of every command (exit 4)
    assert res.returncode == 4 and res.stderr.startswith(
        "coderag: error: no indexed repo or space with checked docs named nope (indexed: payments)"), res.stderr


def test_remove_and_reset_forget_refs_and_authorship(db_env, repo):
    from indexer import on_index_reset, on_source_removed
    from indexer.experts.models import ExpertChange

    settings, sessions = db_env
    on_repo_indexed(sessions, settings, "payments", repo.root, repo.shas["small"])
    on_docs_indexed(sessions, settings, "OPS", [("confluence/OPS/1", "`--max-conn`\n", "p", "")])
    on_source_removed(sessions, "payments")
    assert set(drift_counts(sessions)) == {"OPS"}
    with sessions() as s:
        assert s.query(ExpertChange).count() == 0
    on_index_reset(sessions)
    assert drift_counts(sessions) == {}


def test_a_no_coverage_answer_ends_with_who_to_ask_from_the_closest_code(db_env, repo):
    from bot.answer.service import Answer
    from bot.knowledge import answer_notes
    from bot.retrieval.retriever import SearchHit
    from indexer.read import StoredChunk

    settings, sessions = db_env
    on_repo_indexed(sessions, settings, "payments", repo.root, repo.shas["small"])
    near = [SearchHit(StoredChunk("u1", "payments", "docs/runbook.md", "markdown", "Restart", "section", 3, 8,
                                  repo.shas["small"], None, ""), 1, 0.2, 0.2),
            SearchHit(StoredChunk("u2", "payments", "src/payments/api.py", "python", "", "file", 1, 6,
                                  repo.shas["small"], None, ""), 2, 0.1, 0.1)]
    ans = Answer(question="who approves refunds over 1000 EUR?", text="", citations=[], hits=near,
                 no_coverage=True, model="extractive")
    notes = answer_notes(sessions, ans, settings=settings)
    assert notes == ["Who to ask: @payments-team (owns /src/payments/api.py in CODEOWNERS), "
                     "dave@example.com (owns /src/payments/api.py in CODEOWNERS)."]
    ans.no_coverage = False  # a confident answer with no code cited gets no such line
    assert answer_notes(sessions, ans, settings=settings) == []


def test_more_linked_repos_re_date_known_stale_refs_without_a_type_error(db_env, repo, tmp_path, caplog):
    # SQLite hands timezone-aware columns back naive: re-resolving refs already judged
    # stale against a second repo compared a naive and an aware datetime and the whole
    # drift refresh failed (seen on the eval repositories)
    import logging

    settings, sessions = db_env
    on_repo_indexed(sessions, settings, "payments", repo.root, repo.shas["small"])
    outs = []
    with caplog.at_level(logging.WARNING, logger="indexer"):
        for name in ("billing", "orders"):
            other = build_knowledge_repo(tmp_path / name, int(time.time()))
            outs.append(on_repo_indexed(sessions, settings, name, other.root, other.shas["small"]))
        outs.append(on_repo_indexed(sessions, settings, "payments", repo.root, repo.shas["small"]))
    assert all("drift" in o for o in outs), [r.getMessage() for r in caplog.records]
    assert not [r for r in caplog.records if "could not check" in r.getMessage()]
    stale = {r["ref"] for r in drift_report(sessions)["stale"] if r.get("source", "payments") == "payments"}
    assert set(STALE) <= stale


def _public_runbook_on_secret_code(sessions, settings, repo, tmp_path, monkeypatch):
    """Index the fixture as the restricted ``secret`` and a ``public`` repository holding
    its runbook, mapped to ``secret``'s code; returns the settings with that mapping and
    the ``public`` checkout."""
    from helpers.gitrepo import head_sha, make_git_repo

    on_repo_indexed(sessions, settings, "secret", repo.root, repo.shas["small"])
    runbook = (repo.root / "docs/runbook.md").read_text()
    public = make_git_repo(tmp_path / "pub", {"docs/runbook.md": runbook, "README.md": "# public\n"}, name="public")
    monkeypatch.setenv("CODERAG_DRIFT_SPACE_REPOS", json.dumps({"public": ["secret"]}))
    settings = Settings.from_env()
    on_repo_indexed(sessions, settings, "public", public, head_sha(public))
    return settings, public


def test_an_unrelated_repository_changes_no_drift_result(db_env, repo, tmp_path):
    """A repo's docs are checked against its own code only: indexing another repository
    (whose history defines and removes the very names the first one's runbook uses)
    changes nothing of the first one's report, and names nothing of it."""
    settings, sessions = db_env
    on_repo_indexed(sessions, settings, "payments", repo.root, repo.shas["small"])

    def result():
        rep = drift_report(sessions, "payments")
        return rep["counts"], sorted((r["ref"], r["repo"], r["removed_commit"], r["new_name"], r["new_evidence"])
                                     for r in rep["stale"])

    before = result()
    other = build_knowledge_repo(tmp_path / "other", int(time.time()) + 5)
    on_repo_indexed(sessions, settings, "other", other.root, other.shas["small"])
    on_repo_indexed(sessions, settings, "payments", repo.root, repo.shas["small"])
    assert result() == before
    assert "other" not in json.dumps(drift_report(sessions, "payments"))


def test_a_mapping_to_a_restricted_repository_shows_nothing_of_it_to_a_public_scope(db_env, repo, tmp_path,
                                                                                  monkeypatch):
    """``public``'s runbook is mapped to ``secret``'s code (which renamed what it names):
    with the channel's allow-list ``{public}``, the report, the answer note and the chat
    reply name no commit, path or repository of ``secret``; with both allowed they do."""
    from indexer.read import stale_in_section
    from bot.knowledge import chat_reply

    settings, sessions = db_env
    settings, public = _public_runbook_on_secret_code(sessions, settings, repo, tmp_path, monkeypatch)
    both = drift_report(sessions, "public", allowed={"public", "secret"})
    assert {r["ref"] for r in both["stale"]} == set(STALE)  # the mapping works
    scoped = drift_report(sessions, "public", allowed={"public"})
    assert scoped["stale"] == [] and scoped["counts"]["stale"] == 0
    secrets = {"secret", *(sha[:7] for sha in repo.shas.values())}
    shown = json.dumps(scoped)
    assert not [s for s in secrets if s in shown]
    assert stale_in_section(sessions, "public", "docs/runbook.md", 1, 10_000, allowed={"public"}) == []

    class Service:
        pass

    Service.sessions, Service.settings = sessions, load()  # what chat_reply reads of the AnswerService
    reply = chat_reply(Service(), "drift", "public", allowed={"public"}, target="slack")
    assert not [s for s in secrets if s in reply], reply


# --------------------------------------------------------------------------- real-looking docs

REAL_DOCS = """\
Configuration
=============

Set ``CACHE_TTL`` to change how long results are kept. Call ``shop.ledger.post_entry()``
to write one entry.

.. versionchanged:: 2.0
    ``LEGACY_MODE`` was removed.

Databases
---------

.. code-block:: python

    from sqlalchemy import Column, Integer
    from yourapplication.models import User
    import os
    token = os.environ.get("SHOP_TOKEN")

Mark the endpoint ``build_only`` when a proxy serves the files. Deploy with
``gunicorn --preload``. Install with ``setup.py``. Run ``shop.ledger.old_post()`` for
the old ledger. Build these docs:

.. code-block:: text

    $ cd docs
    $ make html
"""


def test_real_looking_docs_raise_only_the_real_alarm(db_env, tmp_path):
    """Docs as real projects write them (a version note, a third-party import, an
    example's placeholder module and environment variable, a keyword argument, another
    program's flag, a conventional file name, a ``make`` target that Sphinx's catch-all
    ``%:`` rule runs), against a history where each of those strings once appeared and
    went: only the function the project itself defined and removed is stale, with no
    "new name" taken from an unrelated word on the line that replaced it; the others are
    unknown or ok with their reason."""
    from helpers.gitrepo import commit_files, head_sha, make_git_repo

    settings, sessions = db_env
    root = make_git_repo(tmp_path, {
        "shop/__init__.py": "",
        "shop/config.py": 'DEFAULTS = {"CACHE_TTL": 60, "LEGACY_MODE": False}\n',
        "shop/ledger.py": "def post_entry(x):\n    return x\n\n\ndef old_post(x):\n    return x\n",
        "shop/serve.py": "def serve(app):\n    app.add_rule('/f',\n                 build_only=True,\n)\n",
        "examples/db.py": "from sqlalchemy import Column, Integer\nfrom yourapplication.models import User\n",
        "ci/run.sh": "gunicorn --preload app\n",
        "shop/env.py": 'import os\nTOKEN = os.environ.get("SHOP_TOKEN")\n',
        "setup.py": "from setuptools import setup\nsetup()\n",
        "Makefile": "html:\n\tsphinx-build docs out\n",
        "docs/Makefile": "help:\n\t@sphinx-build -M help . _build\n\n%: Makefile\n\t@sphinx-build -M $@ . _build\n",
        "docs/config.rst": REAL_DOCS}, name="shop")
    commit_files(root, {
        "shop/config.py": 'DEFAULTS = {"CACHE_TTL": 60}\n',
        "shop/ledger.py": "def post_entry(x):\n    return x\n\n\ndef flush(x):\n    return x\n",
        "Makefile": "test:\n\tpytest\n",
        "shop/serve.py": "def serve(app):\n    app.add_rule('/f')\n",
        "shop/env.py": "TOKEN = None\n",
        "pyproject.toml": "[project]\nname = 'shop'\n"},
        "drop the legacy mode, the old ledger and the env token",
        delete=("examples/db.py", "ci/run.sh", "setup.py"))
    on_repo_indexed(sessions, settings, "shop", root, head_sha(root))
    rep = drift_report(sessions, "shop")
    assert [r["ref"] for r in rep["stale"]] == ["shop.ledger.old_post()"]
    assert rep["stale"][0]["removed_summary"].startswith("drop the legacy mode")
    assert rep["stale"][0]["new_name"] == ""  # flush took its line, not its name
    from sqlalchemy import select
    from indexer.drift.models import DocRef

    with sessions() as s:
        rows = {r.ref: r for r in s.execute(select(DocRef).where(DocRef.source == "shop")).scalars()}
    notes = {ref: (r.status, r.note) for ref, r in rows.items()}
    assert notes["LEGACY_MODE"][0] == "unknown" and "version" in notes["LEGACY_MODE"][1]
    assert rows["LEGACY_MODE"].context == "history"
    imports = [ref for ref in rows if ref.startswith("from sqlalchemy")]
    assert imports and all(notes[ref][0] == "unknown" and "sqlalchemy" in notes[ref][1] for ref in imports)
    placeholder = [ref for ref in rows if "yourapplication" in ref]
    assert placeholder and all(notes[ref][0] == "unknown" for ref in placeholder)
    for ref in ("build_only", "--preload", "setup.py", "SHOP_TOKEN", "make html"):
        assert ref in rows and notes[ref][0] != "stale", (ref, notes[ref])
    assert notes["CACHE_TTL"][0] == "ok" and notes["shop.ledger.post_entry()"][0] == "ok"
    # the report (drift --json) lists every unknown reference with its reason
    listed = {u["ref"]: u for u in rep["unknown"]}
    assert set(listed) == {ref for ref, (status, _n) in notes.items() if status == "unknown"}
    assert listed["LEGACY_MODE"]["context"] == "history" and listed["LEGACY_MODE"]["note"]


def test_a_public_channel_sees_nothing_of_a_restricted_repository_through_any_surface(db_env, repo, tmp_path,
                                                                                      monkeypatch):
    """Eleven probes of what a channel allowed only ``public`` can read, where
    ``public``'s runbook is mapped to the restricted ``secret`` (which renamed what the
    runbook names): the drift report (JSON and text, Slack and Teams, with and without
    the space argument), the stale references of a cited section, the notes under an
    answer citing it and under a no-coverage answer, and ``who`` on the restricted
    repository's symbol, file and folder. None names a repository, path, symbol, commit or
    commit subject of ``secret``; with ``secret`` allowed too, the same report does."""
    from datetime import datetime, timezone

    from bot.answer.extractive import Citation
    from bot.answer.service import Answer
    from bot.knowledge import answer_notes, chat_reply
    from helpers.gitrepo import head_sha
    from indexer.read import stale_in_section

    settings, sessions = db_env
    settings, public = _public_runbook_on_secret_code(sessions, settings, repo, tmp_path, monkeypatch)
    both = json.dumps(drift_report(sessions, "public", allowed={"public", "secret"}))
    subjects = {"cli: clearer flag name", "api: refunds move to v2", "drop the legacy refund"}
    secrets = {"secret", "src/payments/", *(sha[:7] for sha in repo.shas.values()), *subjects}
    assert [s for s in secrets if s in both]  # the probes can see a leak when there is one

    class Service:
        pass

    Service.sessions, Service.settings = sessions, load()  # what chat_reply reads of the AnswerService
    now = datetime.now(timezone.utc)
    cite = Citation("public", "docs/runbook.md", 1, 200, head_sha(public), "", now)
    cited = Answer(question="how do I restart the API?", text="Restart it [1].", citations=[cite], hits=[],
                   no_coverage=False, model="test")
    vague = Answer(question="who handles refunds?", text="", citations=[], hits=[], no_coverage=True, model="test")
    probes = {
        "drift json": json.dumps(drift_report(sessions, "public", allowed={"public"})),
        "drift json, all sources": json.dumps(drift_report(sessions, None, allowed={"public"})),
        "stale in section": json.dumps(stale_in_section(sessions, "public", "docs/runbook.md", 1, 10_000,
                                                        allowed={"public"})),
        "/coderag drift (slack)": chat_reply(Service(), "drift", "", allowed={"public"}, target="slack"),
        "/coderag drift public (slack)": chat_reply(Service(), "drift", "public", allowed={"public"}, target="slack"),
        "@coderag drift (teams)": chat_reply(Service(), "drift", "public", allowed={"public"}, target="teams"),
        "answer notes, cited runbook": "\n".join(answer_notes(sessions, cited, settings=settings,
                                                              allowed={"public"})),
        "answer notes, no coverage": "\n".join(answer_notes(sessions, vague, settings=settings,
                                                            allowed={"public"})),
        "/coderag who symbol": chat_reply(Service(), "who", "refund_legacy", allowed={"public"}, target="slack"),
        "/coderag who file": chat_reply(Service(), "who", "src/payments/service.py", allowed={"public"},
                                        target="slack"),
        "/coderag who folder": chat_reply(Service(), "who", "src/payments/", allowed={"public"}, target="slack"),
    }
    assert len(probes) >= 10
    asked = {"/coderag who file": "src/payments/service.py", "/coderag who folder": "src/payments/"}
    # a reply may repeat what was asked; nothing else of `secret` (its other paths, its
    # authors, its commits) may appear
    secrets |= {"src/payments/api.py", "src/payments/cli.py", "Alice Author", "Bob Builder", "Carol Coder"}
    leaks = {name: [s for s in secrets if s in text.replace(asked.get(name, "\0"), "")]
             for name, text in probes.items()}
    assert not any(leaks.values()), (leaks, probes)
    assert probes["/coderag who file"].startswith("⚠️ no indexed file or folder src/payments/service.py in public")
