"""The MCP server as coding agents meet it: ``coderag mcp`` over stdio and ``/mcp`` in a
real ``coderag serve`` over streamable HTTP, each driven by the SDK's own client, on a
real Weaviate with two indexed repositories (one of them restricted).
"""
from __future__ import annotations

import getpass
import json
import re
import subprocess
import sys
import time

import anyio
import httpx
import pytest

from helpers.gitrepo import head_sha, make_git_repo
from common.settings import Settings
from indexer import index_repository
from indexer.store.weaviate_server import free_ports

pytestmark = pytest.mark.weaviate

#: Only inside the restricted repository, never in a question: any occurrence is a leak.
MARKER = "zxleak7731"
PUBLIC = {
    "pricing/tax.py": (
        '"""Pricing helpers."""\n\n\n'
        "def calculate_price_with_tax(price, rate):\n"
        '    """Price plus sales tax, rounded to cents."""\n'
        "    return round(price * (1 + rate), 2)\n\n\n"
        "def checkout_total(prices, rate):\n"
        '    """The basket total with tax."""\n'
        "    return sum(calculate_price_with_tax(p, rate) for p in prices)\n"
    ),
    "CODEOWNERS": "/pricing/ @pricing-team\n",
}
SECRET = {
    "vault/keys.py": (
        f'"""Key rotation for the vault ({MARKER} policy)."""\n\n\n'
        "def rotate_vault_keys(vault):\n"
        f'    """Rotate every key in the vault under policy {MARKER}."""\n'
        "    return [k.rotate() for k in vault]\n\n\n"
        "def nightly_vault_job(vault):\n"
        "    return rotate_vault_keys(vault)\n"
    ),
    "docs/runbook.md": f"# Vault runbook ({MARKER})\n\nCall `rotate_vault_keys` when a key leaks.\n",
    "CODEOWNERS": f"/vault/ @{MARKER}-owners\n",
}
TOOLS = {"search", "ask", "impact", "who", "drift", "status", "read"}
PUB_TOKEN, ALL_TOKEN = "pub-token-0123456789abcdef", "all-token-0123456789abcdef"


@pytest.fixture
def repos(tmp_path, store, local_embedder, settings_env):
    """``public`` and ``secret`` indexed in-process (the CLI and servers read them)."""
    from common.db import open_database

    out = {}
    settings = Settings.from_env()
    sessions = open_database(settings)
    for name, files in (("public", PUBLIC), ("secret", SECRET)):
        repo = make_git_repo(tmp_path, files, name=name)
        index_repository(repo, settings=settings, store=store, embedder=local_embedder, sessions=sessions)
        out[name] = repo
    return out


def cli_json(env: dict, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "bot.cli", *args, "--json"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def _structured(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


def _error_line(result) -> str:
    assert result.is_error, result
    text = result.content[0].text
    assert "\n" not in text.strip() and "Traceback" not in text, text
    return text


async def _session_calls(session, calls):
    out = []
    for name, args in calls:
        out.append(await session.call_tool(name, args))
    return out


# ----------------------------------------------------------------------------- stdio


def test_stdio_tools_match_the_cli_and_reject_bad_input(repos, settings_env):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = dict(settings_env)
    params = StdioServerParameters(command=sys.executable, args=["-m", "bot.cli", "mcp"], env=env)
    question = "where is the price with tax computed?"
    sha = head_sha(repos["public"])

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            good = await _session_calls(session, [
                ("search", {"query": question, "repo": "public", "top_k": 3}),
                ("ask", {"question": question, "repo": "public"}),
                ("impact", {"symbol": "calculate_price_with_tax", "repo": "public", "depth": 2}),
                ("who", {"path_or_symbol": "pricing/tax.py"}),
                ("drift", {}),
                ("status", {}),
                ("read", {"repo": "public", "path": "pricing/tax.py", "start_line": 4, "end_line": 6}),
            ])
            bad = await _session_calls(session, [
                ("search", {"query": ""}),
                ("search", {"query": "x" * 5000}),
                ("search", {"query": "price", "top_k": 1000}),
                ("search", {"query": "price", "repo": "nosuch"}),
                ("impact", {"symbol": "no_such_function_anywhere"}),
                ("impact", {"symbol": "checkout_total", "depth": 99}),
                ("read", {"repo": "public", "path": "../../etc/passwd", "start_line": 1, "end_line": 2}),
                ("read", {"repo": "public", "path": "/etc/passwd", "start_line": 1, "end_line": 2}),
                ("read", {"repo": "public", "path": "pricing/tax.py", "start_line": 1, "end_line": 5000}),
                ("read", {"repo": "public", "path": "pricing/nope.py", "start_line": 1, "end_line": 2}),
                ("who", {"path_or_symbol": "   "}),
            ])
            resources = await session.list_resources()
            listing = await session.read_resource(resources.resources[0].uri)
            return tools, good, bad, resources, listing

    tools, good, bad, resources, listing = anyio.run(main)
    assert {t.name for t in tools.tools} == TOOLS
    schemas = {t.name: t.input_schema for t in tools.tools}
    assert schemas["search"]["properties"]["top_k"]["type"] == "integer" and schemas["search"]["required"] == ["query"]
    assert set(schemas["read"]["required"]) == {"repo", "path", "start_line", "end_line"}

    search, ask, impact, who, drift, status, read = (_structured(r) for r in good)
    # search: the same ranked results as `coderag search --json`, plus snippet and index age
    cli = cli_json(settings_env, "search", question, "--repo", "public", "--top-k", "3")
    assert [(r["path"], r["start_line"], r["symbol"]) for r in search["results"]] == \
        [(r["path"], r["start_line"], r["symbol"]) for r in cli["results"]]
    top = search["results"][0]
    assert top["commit"] == sha and "calculate_price_with_tax" in top["snippet"]
    assert top["index_age"]["age_seconds"] is not None
    # ask: the same object as `coderag ask --json`
    cli_ask = cli_json(settings_env, "ask", question, "--repo", "public", "--no-log")
    assert set(ask) == set(cli_ask) and ask["answer"] == cli_ask["answer"]
    assert ask["citations"] == cli_ask["citations"] and ask["no_coverage"] is False
    # impact: the caller with its location, and the note on dynamic callers
    assert "checkout_total" in {c.get("symbol") for c in _callers(impact)}
    assert "static call graph" in impact["note"]
    cli_impact = cli_json(settings_env, "impact", "calculate_price_with_tax", "--repo", "public", "--depth", "2")
    assert {k: v for k, v in impact.items() if k != "note"} == cli_impact
    assert who["experts"] and who["experts"][0]["who"] == "@pricing-team"
    assert "counts" in drift
    assert {s["name"] for s in status["sources"]} == {"public", "secret"}
    assert read["commit"] == sha and read["text"].splitlines()[0] == "def calculate_price_with_tax(price, rate):"
    assert len(read["text"].splitlines()) == 3

    lines = [_error_line(r) for r in bad]
    assert "empty" in lines[0] and "5000 characters" in lines[1] and "top_k" in lines[2]
    assert "nosuch" in lines[3] and "no_such_function_anywhere" in lines[4] and "depth" in lines[5]
    assert all("inside the repository" in line for line in lines[6:8])
    assert "end_line" in lines[8] and "pricing/nope.py" in lines[9] and "empty" in lines[10]

    assert [str(r.uri) for r in resources.resources] == ["coderag://sources"]
    assert {s["name"] for s in json.loads(listing.contents[0].text)} == {"public", "secret"}

    # the query log has the MCP question, under its own surface
    from common.db import open_database
    from bot.querylog.models import Query

    sessions = open_database(Settings.from_env())
    with sessions() as s:
        rows = s.query(Query).filter(Query.source == "mcp").all()
    assert [r.question for r in rows] == [question]
    assert rows[0].user != getpass.getuser() and re.fullmatch("[0-9a-f]{64}", rows[0].user)  # hashed by default


def _callers(report: dict) -> list[dict]:
    """Every caller entry of an impact report, whatever its grouping."""
    found = []

    def walk(x):
        if isinstance(x, dict):
            if "symbol" in x and "path" in x:
                found.append(x)
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk({k: v for k, v in report.items() if k not in ("target", "definition")})
    return found


# ----------------------------------------------------------------------------- HTTP


@pytest.fixture
def served(repos, settings_env, tmp_path):
    """A real ``coderag serve`` (bot role, MCP only) on a free port."""
    (port,) = free_ports(1)
    tokens = {"public-agent": {"token": PUB_TOKEN, "sources": ["public"]},
              "admin-agent": {"token": ALL_TOKEN, "sources": ["*"]}}
    env = dict(settings_env, CODERAG_ROLE="bot", CODERAG_MCP_TOKENS=json.dumps(tokens))
    log = open(tmp_path / "serve.log", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--port", str(port)], env=env,
                            stdout=log, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            if proc.poll() is not None:
                log.seek(0)
                raise AssertionError(f"serve exited {proc.returncode}: {log.read()}")
            try:
                if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield base, env
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _http_calls(url: str, token: str, calls, *, resources: bool = False):
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def main():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
            async with streamable_http_client(url, http_client=http) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                out = await _session_calls(session, calls)
                if resources:
                    listed = await session.list_resources()
                    out.append(listed)
                    out.append(await session.read_resource(listed.resources[0].uri))
                return out

    return anyio.run(main)


def _dump(result) -> str:
    return json.dumps(result.model_dump(mode="json", by_alias=True), default=str)


def test_http_requires_a_known_token_and_leaks_nothing_outside_its_scope(served, repos):
    base, env = served
    url = base + "/mcp"
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    for auth in (None, "Bearer wrong-token-0123456789", "Basic " + PUB_TOKEN, f"Bearer {PUB_TOKEN}x"):
        h = dict(headers, **({"Authorization": auth} if auth else {}))
        r = httpx.post(url, json=init, headers=h, timeout=30)
        assert r.status_code == 401, (auth, r.status_code, r.text)
        assert r.headers["www-authenticate"].startswith("Bearer")

    secret_path = "vault/keys.py"
    attempts = [
        ("search", {"query": "rotate vault keys policy"}),
        ("search", {"query": "rotate_vault_keys", "top_k": 50}),
        ("search", {"query": "vault key rotation", "repo": "secret"}),
        ("ask", {"question": "How are the vault keys rotated?"}),
        ("ask", {"question": "who rotates the vault keys?", "repo": "secret"}),
        ("impact", {"symbol": "rotate_vault_keys"}),
        ("impact", {"symbol": "rotate_vault_keys", "repo": "secret"}),
        ("impact", {"symbol": f"{secret_path}:4"}),
        ("impact", {"symbol": "rotate"}),
        ("who", {"path_or_symbol": secret_path}),
        ("who", {"path_or_symbol": "rotate_vault_keys"}),
        ("who", {"path_or_symbol": "who owns the vault key rotation?"}),
        ("drift", {"source": "secret"}),
        ("drift", {}),
        ("status", {}),
        ("read", {"repo": "secret", "path": secret_path, "start_line": 1, "end_line": 5}),
        ("read", {"repo": "public", "path": f"../secret/{secret_path}", "start_line": 1, "end_line": 5}),
    ]
    results = _http_calls(url, PUB_TOKEN, attempts, resources=True)
    assert len(results) >= 15
    for (name, args), result in zip(attempts + [("resources/list", {}), ("resources/read", {})], results):
        text = _dump(result)
        assert MARKER not in text.lower() and "nightly_vault_job" not in text, (name, args, text[:500])
        for value in args.values():  # an error may echo the caller's own argument: not a leak
            text = text.replace(json.dumps(value)[1:-1], "").replace(str(value), "")
        assert '"secret"' not in text and "secret@" not in text and secret_path not in text, (name, args, text[:500])
    # the same repository-unknown error for a forbidden repo as for one that does not exist
    forbidden, missing = _http_calls(url, PUB_TOKEN, [("search", {"query": "x", "repo": "secret"}),
                                                      ("search", {"query": "x", "repo": "nosuch"})])
    assert _error_line(forbidden).replace("secret", "R") == _error_line(missing).replace("nosuch", "R")

    # the marker is there for a token that may read everything (so the checks above can fail)
    full_search, full_read = _http_calls(url, ALL_TOKEN, [
        ("search", {"query": "rotate vault keys policy"}),
        ("read", {"repo": "secret", "path": secret_path, "start_line": 4, "end_line": 4})])
    assert MARKER in _dump(full_search)
    assert _structured(full_read)["text"] == "def rotate_vault_keys(vault):"

    # the HTTP search agrees with the CLI
    (pub_search,) = _http_calls(url, PUB_TOKEN, [("search", {"query": "price with tax", "top_k": 3})])
    cli = cli_json(env, "search", "price with tax", "--repo", "public", "--top-k", "3")
    assert [(r["path"], r["start_line"]) for r in _structured(pub_search)["results"]] == \
        [(r["path"], r["start_line"]) for r in cli["results"]]


def test_token_setting_is_validated():
    from common.errors import BadInput
    from bot.mcp_server import McpAccess

    ok = McpAccess.parse(json.dumps({"a": {"token": "x" * 16, "sources": ["r"]}, "b": {"token": "y" * 16,
                                                                                          "sources": ["*"]}}))
    assert ok.principal("Bearer " + "x" * 16).allowed == frozenset({"r"})
    assert ok.principal("Bearer " + "y" * 16).allowed is None
    assert ok.principal("Bearer " + "z" * 16) is None and ok.principal(None) is None
    for raw, fragment in (("[1]", "JSON object"), ("{", "not valid JSON"),
                          ('{"a": {"token": "short", "sources": []}}', "at least 16"),
                          ('{"a": {"token": "xxxxxxxxxxxxxxxxxx"}}', "list of source names"),
                          ('{"a": {"token": "xxxxxxxxxxxxxxxxxx", "sources": []}, '
                           '"b": {"token": "xxxxxxxxxxxxxxxxxx", "sources": []}}', "share one token")):
        with pytest.raises(BadInput, match=fragment) as info:
            McpAccess.parse(raw)
        assert "xxxxxxxx" not in str(info.value)
