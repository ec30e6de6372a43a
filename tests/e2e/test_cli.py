"""The ``coderag`` CLI as a user runs it: a subprocess per command, real Weaviate, real MiniLM.

Expected failures must print ``coderag: error: ...`` (no traceback) and exit non-zero.
"""
import json
import re
import subprocess
import sys

import pytest

from common.errors import ExitCode
from bot.retrieval.query_analysis import ALPHA_IDENTIFIER
from helpers.cli import TINY_FILES, assert_error, run_cli, run_many
from helpers.embedders import HashEmbedder
from helpers.gitrepo import head_sha, make_git_repo
from common.settings import Settings
from indexer import index_repository
from indexer.store.weaviate_server import free_ports

pytestmark = pytest.mark.weaviate

RESULT_KEYS = {"repo", "path", "start_line", "end_line", "symbol", "kind", "score", "commit"}


@pytest.fixture(autouse=True)
def migrated_home(settings_env):
    """Create the SQL database under CODERAG_HOME once, before commands run concurrently.

    Two first-run commands migrating the same fresh SQLite file race ("table ... already
    exists"); that bug is pinned by test_concurrent_first_commands_do_not_race.
    """
    from common.db import open_database

    open_database(Settings.from_env())


# ----------------------------------------------------------------------------- failures
def test_index_path_that_is_not_a_git_repo_or_missing(tmp_path, settings_env, store):
    plain = tmp_path / "plain"
    plain.mkdir()
    not_git, missing = run_many(settings_env, ["index", str(plain)], ["index", str(tmp_path / "nope")])
    assert_error(not_git, ExitCode.NOT_A_GIT_REPOSITORY, f"{plain} is not a Git repository (run `git init` and commit first)")
    assert_error(missing, ExitCode.NOT_A_GIT_REPOSITORY, f"{tmp_path / 'nope'}: no such directory")
    assert store.query.count() == 0 and store.sources.all() == []


def test_index_of_an_empty_path_is_a_usage_error_not_the_current_folder(tmp_path, settings_env, store):
    repo = make_git_repo(tmp_path, TINY_FILES, name="tiny")  # a repository the command could index by accident
    proc = subprocess.run([sys.executable, "-m", "bot.cli", "index", ""], env=settings_env, cwd=repo,
                          capture_output=True, text=True, timeout=120)
    assert_error(proc, ExitCode.USAGE, "PATH is empty: give the folder of a Git repository (`coderag index .` for this one)")
    assert store.query.count() == 0 and store.sources.all() == []


@pytest.mark.parametrize("args", [["status"], ["search", "anything"], ["ask", "anything"]])
def test_weaviate_url_on_a_closed_port(settings_env, args):
    (port,) = free_ports(1)
    env = dict(settings_env, WEAVIATE_URL=f"http://127.0.0.1:{port}")
    proc = run_cli(env, *args)
    assert_error(proc, 3, f"cannot reach Weaviate (http://127.0.0.1:{port})")


def test_weaviate_url_that_is_not_a_url(settings_env):
    proc = run_cli(dict(settings_env, WEAVIATE_URL="not-a-url"), "status")
    assert_error(proc, 3, "WEAVIATE_URL='not-a-url' is not a URL")


def test_bad_integer_setting(settings_env):
    proc = run_cli(dict(settings_env, CODERAG_MAX_FILE_BYTES="lots"), "status")
    assert_error(proc, 2, "CODERAG_MAX_FILE_BYTES must be a whole number >= 1, got 'lots'")


def test_empty_index(settings_env, store):
    for proc in run_many(settings_env, ["search", "where is the price computed?"],
                         ["ask", "where is the price computed?"]):
        assert_error(proc, 4, "the index is empty: run `coderag index PATH` first")


def test_unknown_repo(settings_env, tiny):
    proc = run_cli(settings_env, "search", "price", "--repo", "nosuch")
    assert_error(proc, 4, "no indexed repo named nosuch (indexed: tiny)")


def test_top_k_out_of_range(settings_env, tmp_path):
    cases = [("search", "0"), ("search", "1000"), ("search", "-1"), ("ask", "0"), ("ask", "1000"),
             ("eval", "0"), ("eval", "101")]
    procs = run_many(settings_env, *[[cmd, str(tmp_path / "golden.jsonl") if cmd == "eval" else "question",
                                      "--top-k", k] for cmd, k in cases])
    for (_cmd, k), proc in zip(cases, procs):
        assert_error(proc, 2, f"--top-k must be between 1 and 100, got {k}")


@pytest.mark.parametrize("lines, fragment", [
    (['{"id": "1", "question": "price"}', "this is not json"], "batch.jsonl:2: not valid JSON (Expecting value)"),
    (['{"id": "1"}'], 'batch.jsonl:1: each line needs an "id" and a "question" string'),
    (['{"question": "no id"}'], 'batch.jsonl:1: each line needs an "id" and a "question" string'),
    (['["id", "question"]'], 'batch.jsonl:1: each line needs an "id" and a "question" string'),
])
def test_batch_with_malformed_line(settings_env, tmp_path, lines, fragment):
    batch = tmp_path / "batch.jsonl"
    batch.write_text("\n".join(lines) + "\n")
    search, evaluation = run_many(settings_env, ["search", "--batch", str(batch)], ["eval", str(batch)])
    assert_error(search, 2, fragment)
    assert_error(evaluation, 2, fragment)


def test_batch_with_an_unknown_repo_fails_before_the_first_search(settings_env, tiny, tmp_path):
    """Every line's repo is checked up front: nothing is printed for the good first line,
    and the error names the first bad line (and the others)."""
    batch = tmp_path / "q.jsonl"
    batch.write_text("\n".join([json.dumps({"id": "1", "question": "price with tax", "repo": "tiny"}), "",
                                json.dumps({"id": "2", "question": "price", "repo": "gamma"}),
                                json.dumps({"id": "3", "question": "health", "repo": "delta"})]) + "\n")
    search, evaluation = run_many(settings_env, ["search", "--batch", str(batch), "--json"], ["eval", str(batch)])
    for proc in (search, evaluation):
        assert_error(proc, ExitCode.EMPTY_INDEX,
                     f"{batch}:3: no indexed repo named gamma (indexed: tiny); also line 4")
    # --repo counts for the lines without a repo of their own
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"id": "1", "question": "price"}) + "\n")
    assert_error(run_cli(settings_env, "search", "--batch", str(plain), "--repo", "nosuch"), ExitCode.EMPTY_INDEX,
                 f"{plain}:1: no indexed repo named nosuch (indexed: tiny)")


def test_batch_file_missing(settings_env, tmp_path):
    proc = run_cli(settings_env, "search", "--batch", str(tmp_path / "none.jsonl"))
    assert_error(proc, 2, "none.jsonl: no such file")


def test_search_needs_question_xor_batch(settings_env, tmp_path):
    assert_error(run_cli(settings_env, "search"), 2, "give either a QUESTION or --batch FILE")
    batch = tmp_path / "b.jsonl"
    batch.write_text('{"id": "1", "question": "x"}\n')
    assert_error(run_cli(settings_env, "search", "q", "--batch", str(batch)), 2,
                 "give either a QUESTION or --batch FILE")


# ----------------------------------------------------------------------------- happy paths
def test_index_command_json_and_status(tmp_path, settings_env, store):
    repo = make_git_repo(tmp_path, dict(TINY_FILES, **{"logo.png": b"\x89PNG\x00"}), name="tiny")
    proc = run_cli(settings_env, "index", str(repo), "--name", "shop", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["repo"] == "shop" and summary["commit"] == head_sha(repo)
    assert (summary["files_seen"], summary["files_indexed"]) == (3, 2)
    assert summary["skipped"] == {"binary": 1}
    assert summary["chunks"] == summary["embedded"] > 0
    assert summary["model"] == "all-MiniLM-L6-v2"
    assert list(summary) == ["repo", "root", "commit", "files_seen", "files_indexed", "chunks", "embedded",
                             "reused_vectors", "deleted_stale", "skipped", "skipped_examples", "parse_warnings",
                             "dirty_paths", "seconds_parse", "seconds_graph", "graph_definitions", "graph_edges",
                             "seconds_embed", "seconds_write", "seconds_total", "model", "keyword_only",
                             "vectors_pending", "seconds_keyword_ready", "max_chunks_in_flight"]
    assert (summary["deleted_stale"], summary["skipped_examples"], summary["dirty_paths"]) == (0, {"binary": "logo.png"}, [])
    assert summary["graph_definitions"] > 0 and summary["seconds_total"] >= summary["seconds_embed"] > 0

    status = run_cli(settings_env, "status", "--json")
    assert status.returncode == 0, status.stderr
    (src,) = json.loads(status.stdout)["sources"]
    assert (src["name"], src["commit"], src["chunks"], src["files"]) == ("shop", head_sha(repo), summary["chunks"], 2)


def test_index_summary_line_counts_the_keyword_only_chunks(tmp_path, settings_env, store):
    # the default policy leaves test chunks without a vector: the line must still add up
    repo = make_git_repo(tmp_path, dict(TINY_FILES, **{"tests/test_tax.py": "def test_tax():\n    assert 1\n"}),
                         name="tiny")
    proc = run_cli(settings_env, "index", str(repo), "--name", "shopkw")
    assert proc.returncode == 0, proc.stderr
    m = re.search(r"(\d+) chunks \((\d+) embedded, (\d+) unchanged, (\d+) keyword-only\)", proc.stdout)
    assert m, proc.stdout
    chunks, embedded, unchanged, keyword_only = map(int, m.groups())
    assert keyword_only >= 1 and embedded + unchanged + keyword_only == chunks


def test_search_json_result_shape(settings_env, tiny):
    proc, forced = run_many(settings_env, ["search", "calculatePriceWithTax", "--json", "--top-k", "3"],
                            ["search", "calculatePriceWithTax", "--json", "--alpha", "0.9"])
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["alpha"] == 0.9
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1
    out = json.loads(lines[0])
    assert set(out) == {"id", "results", "alpha"}
    assert out["id"] == "q" and out["alpha"] == ALPHA_IDENTIFIER
    assert 1 <= len(out["results"]) <= 3
    for r in out["results"]:
        assert set(r) == RESULT_KEYS
        assert r["repo"] == "tiny" and r["commit"] == head_sha(tiny)
        assert isinstance(r["start_line"], int) and isinstance(r["score"], float)
    top = out["results"][0]
    assert (top["path"], top["symbol"], top["kind"], top["start_line"], top["end_line"]) == \
        ("pricing/tax.py", "calculatePriceWithTax", "function", 4, 6)
    scores = [r["score"] for r in out["results"]]
    assert scores == sorted(scores, reverse=True)


def test_search_batch_with_per_line_repo(tmp_path, settings_env, store, local_embedder):
    settings = Settings.from_env()
    a = make_git_repo(tmp_path, TINY_FILES, name="a")
    b = make_git_repo(tmp_path, {"billing/invoice.py": "def compute_invoice_total(lines):\n    return sum(lines)\n"}, name="b")
    index_repository(a, name="alpha", settings=settings, store=store, embedder=local_embedder)
    index_repository(b, name="beta", settings=settings, store=store, embedder=local_embedder)
    batch = tmp_path / "q.jsonl"
    batch.write_text("\n".join([
        json.dumps({"id": "only-alpha", "question": "compute the invoice total", "repo": "alpha"}),
        "",
        json.dumps({"id": "only-beta", "question": "compute the invoice total", "repo": "beta"}),
        json.dumps({"id": "all", "question": "compute_invoice_total"}),
    ]) + "\n")
    proc = run_cli(settings_env, "search", "--batch", str(batch), "--top-k", "5")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in rows] == ["only-alpha", "only-beta", "all"]
    assert all(set(r) == {"id", "results"} for r in rows)
    assert {x["repo"] for x in rows[0]["results"]} == {"alpha"}
    assert [(x["repo"], x["path"], x["symbol"]) for x in rows[1]["results"]] == \
        [("beta", "billing/invoice.py", "compute_invoice_total")]
    assert rows[2]["results"][0]["symbol"] == "compute_invoice_total"
    assert {x["repo"] for x in rows[2]["results"]} == {"alpha", "beta"}
    for r in rows:
        for x in r["results"]:
            assert set(x) == RESULT_KEYS


def test_ask_cites_path_lines_and_sha_and_declines_unrelated_questions(settings_env, tiny):
    proc, unrelated = run_many(settings_env, ["ask", "how is the price with tax calculated?"],
                               ["ask", "what is the recipe for sourdough bread?"])
    assert proc.returncode == 0, proc.stderr
    sha7 = head_sha(tiny)[:7]
    # Whitespace-normalised: rich wraps lines at 80 columns when stdout is not a terminal
    # (reported bug; see test_long_output_lines_are_not_wrapped).
    flat = " ".join(proc.stdout.split())
    cites = re.findall(r"(\S+?:\d+-\d+@[0-9a-f]{7})", flat)
    assert cites and cites[0] == f"tiny/pricing/tax.py:4-6@{sha7}", proc.stdout
    assert all(c.endswith("@" + sha7) for c in cites)
    # the answer leads with a sentence from the code, then lists each source once
    assert proc.stdout.startswith("`calculatePriceWithTax` (function, pricing/tax.py:4): Price plus sales tax"), \
        proc.stdout
    assert flat.count(f"tiny/pricing/tax.py:4-6@{sha7}") == 1

    # A question the repo cannot answer: a no-coverage message naming the indexed
    # version, and no weak citations (the exact wording is the answer module's business).
    assert unrelated.returncode == 0, unrelated.stderr
    print("ASK-SOURDOUGH-OUTPUT:\n" + unrelated.stdout)
    flat = " ".join(unrelated.stdout.split())
    assert f"tiny@{sha7}" in flat
    assert re.search(r":\d+-\d+@[0-9a-f]{7}", flat) is None, unrelated.stdout
    assert "calculatePriceWithTax" not in flat and "HealthHandler" not in flat


def test_eval_on_a_small_golden_file(tmp_path, settings_env, tiny):
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(json.dumps(q) for q in [
        {"id": "tax", "kind": "symbol", "question": "calculatePriceWithTax",
         "expected": [{"path": "pricing/tax.py", "line": 4}]},
        {"id": "health", "kind": "concept", "question": "which handler answers the load balancer health probe?",
         "repo": "tiny", "expected": [{"path": "server/health.go", "line": 6}]},
        {"id": "none", "question": "what is the recipe for sourdough bread?", "expected": []},
    ]) + "\n")
    results = tmp_path / "results.jsonl"
    proc, text = run_many(settings_env, ["eval", str(golden), "--json", "--results", str(results)],
                          ["eval", str(golden)])
    assert text.returncode == 0, text.stderr
    assert "symbol_recall@5: 1.0\n" in text.stdout and "mrr@10: 1.0\n" in text.stdout
    assert proc.returncode == 0, proc.stderr
    m = json.loads(proc.stdout)
    assert m["questions"] == 2
    assert m["symbol_recall@1"] == 1.0 and m["symbol_recall@5"] == 1.0 and m["symbol_recall@10"] == 1.0
    assert m["file_recall@5"] == 1.0 and m["mrr@10"] == 1.0
    assert m["symbol_recall@5_by_kind"] == {"concept": "1/1", "symbol": "1/1"}
    assert m["misses@5"] == []
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["tax", "health", "none"]
    assert all(set(x) == RESULT_KEYS for r in rows for x in r["results"])

    assert "Traceback" not in proc.stderr


def test_ask_and_search_note_an_index_older_than_stale_hours(settings_env, tiny):
    """CODERAG_STALE_HOURS sets when `ask` and `search` say the index is old (0: always)."""
    env = dict(settings_env, CODERAG_STALE_HOURS="0")
    ask, search = run_many(env, ["ask", "how is the price with tax computed?", "--no-log"],
                           ["search", "price with tax"])
    for proc in (ask, search):
        assert proc.returncode == 0, proc.stderr
        assert "Warning: the index of tiny is 0 hours old (indexed at " in proc.stdout, proc.stdout
        assert "older than CODERAG_STALE_HOURS=0)" in proc.stdout, proc.stdout
    default = run_cli(settings_env, "search", "price with tax")
    assert default.returncode == 0 and "Warning" not in default.stdout, default.stdout
    # the citation format of `ask` (repo/path:start-end@sha), and no tuning internals
    assert re.search(r"^ 1\. tiny/\S+\.py:\d+-\d+@[0-9a-f]{7} ", default.stdout, re.M), default.stdout
    assert "alpha=" not in default.stdout


def test_reset_yes_clears_index(settings_env, tiny):
    proc = run_cli(settings_env, "reset", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Index cleared."
    status = run_cli(settings_env, "status")
    assert status.stdout.strip() == "Nothing indexed yet: run `coderag index PATH`."


def test_weaviate_status_when_not_running(settings_env):
    proc = run_cli(settings_env, "weaviate", "status")
    assert (proc.returncode, proc.stdout.strip()) == (0, "not running")


# ----------------------------------------------------------------------------- regressions
# Each test below pins a bug found in review (wrapping, usage errors, exit codes, Voyage
# errors, the first-run migration race).

def test_long_error_messages_stay_on_one_line(settings_env):
    (port,) = free_ports(1)
    proc = run_cli(dict(settings_env, WEAVIATE_URL=f"http://127.0.0.1:{port}"), "status")
    assert proc.returncode == 3
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_long_output_lines_are_not_wrapped(tmp_path, settings_env, store):
    repo = make_git_repo(tmp_path, {"a.py": "def a_function_name():\n    return 1\n"}, name="r")
    name = "a-repository-with-a-rather-long-name-for-status"
    index_repository(repo, name=name, settings=Settings.from_env(), store=store, embedder=HashEmbedder())
    proc = run_cli(settings_env, "status")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{name}: {head_sha(repo)[:7]} · 1 files · 1 chunks"), proc.stdout


@pytest.mark.parametrize("args", [["search", "q", "--alpha", "3"], ["search", "--bogus"], ["index"], []])
def test_usage_errors_are_not_tracebacks(settings_env, args):
    proc = run_cli(settings_env, *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, proc.stderr


def test_reset_from_a_pipe_asks_for_yes_instead_of_prompting(settings_env, tiny):
    proc = run_cli(settings_env, "reset", input="n\n")
    assert proc.returncode == 2 and "--yes" in proc.stderr, (proc.stdout, proc.stderr)


def test_voyage_failure_is_a_one_line_error(tmp_path, settings_env, store):
    from helpers.fake_voyage import start_fake_voyage

    fake = start_fake_voyage()
    fake.fail_with = [401] * 5
    try:
        repo = make_git_repo(tmp_path, TINY_FILES, name="tiny")
        env = dict(settings_env, VOYAGE_API_KEY="pa-bad-key", VOYAGE_BASE_URL=fake.base_url)
        proc = run_cli(env, "index", str(repo), "--json")
    finally:
        fake.server.shutdown()
        fake.server.server_close()
    assert len(fake.embed_requests) == 1
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode != 0
    assert " ".join(proc.stderr.split()).startswith("coderag: error: ")


def test_concurrent_first_commands_do_not_race(tmp_path, settings_env):
    env = dict(settings_env, CODERAG_HOME=str(tmp_path / "fresh-home"))
    procs = run_many(env, ["status"], ["status"], ["status"])
    assert [p.returncode for p in procs] == [0, 0, 0], [p.stderr for p in procs]
