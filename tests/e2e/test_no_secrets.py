"""No secret in any log line, error, status output or database row.

Plants known values for every secret coderag reads (Slack bot token and signing secret,
Anthropic and Voyage API keys, a password in a repo URL and in ``WEAVIATE_URL``, the GitHub
webhook secret and GitLab token, the user-hash salt, the metrics token, the Teams client
secret, the Confluence token), drives the paths that log, fail, print and store (a real
``coderag serve`` with its log at DEBUG in a file, the CLI's output, ``status --json``,
``index_state`` and query-log rows, every table of the SQLite database) and greps all of
them for the planted values.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, inspect, text

from helpers.fake_anthropic import start_fake_anthropic
from helpers.fake_slack import BOT_USER_ID, TEAM_ID, FakeSlack, sign
from helpers.fake_voyage import start_fake_voyage
from helpers.freshness import post_github, push_payload
from helpers.gitrepo import make_git_repo
from helpers.serve_process import free_port, serve_process

pytestmark = pytest.mark.weaviate

ROOT = Path(__file__).resolve().parents[2]
PLANTED = {
    "SLACK_BOT_TOKEN": "xoxb-PLANTED0bot0token0a1b2c3",
    "SLACK_SIGNING_SECRET": "PLANTEDsigningSecret0d4e5f6",
    "ANTHROPIC_API_KEY": "sk-ant-PLANTED0anthropic0key0g7",
    "VOYAGE_API_KEY": "pa-PLANTED0voyage0key0h8i9",
    "CODERAG_GITHUB_WEBHOOK_SECRET": "PLANTED0github0webhook0j1",
    "CODERAG_GITLAB_WEBHOOK_TOKEN": "PLANTED0gitlab0token0k2",
    "CODERAG_USER_HASH_SALT": "PLANTED0user0hash0salt0l3m4",
    "CODERAG_METRICS_TOKEN": "PLANTED0metrics0token0n5",
    "CODERAG_TEAMS_CLIENT_SECRET": "PLANTED0teams0client0secret0o6",
    "CODERAG_CONFLUENCE_API_TOKEN": "PLANTED0confluence0token0p7",
}
REPO_PASSWORD = "PLANTED0repo0password0q8"
WEAVIATE_PASSWORD = "PLANTED0weaviate0password0r9"
SECRETS = [*PLANTED.values(), REPO_PASSWORD, WEAVIATE_PASSWORD]


def _leaks(where: str, text: str) -> list[str]:
    return [f"{where}: {s}" for s in SECRETS if s in (text or "")]


def _cli(env, *args, timeout=180):
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def _database_dump(url: str) -> str:
    """Every row of every table, as text."""
    engine = create_engine(url)
    out = []
    with engine.connect() as conn:
        for table in inspect(engine).get_table_names():
            for row in conn.execute(text(f'SELECT * FROM "{table}"')):
                out.append(f"{table}: {tuple(row)!r}")
    engine.dispose()
    return "\n".join(out)


def test_planted_secrets_appear_nowhere(settings_env, store, tmp_path, caplog):
    # ``store``: an empty index, as on a fresh install. The session's Weaviate otherwise holds
    # other tests' repos: a "shop" indexed from another folder (`index --name shop` is then
    # rightly refused as a name clash) and MiniLM vectors (this test embeds with Voyage).
    voyage, anthropic, slack = start_fake_voyage(), start_fake_anthropic(), FakeSlack().start()
    anthropic.reply_text = "The tax is computed in calculatePriceWithTax [1]."
    seen: list[tuple[str, str]] = []  # (where, text) of everything a user or operator can see
    try:
        code = make_git_repo(tmp_path / "code", {"pricing/tax.py": (
            "def calculatePriceWithTax(price, rate):\n    \"\"\"Price plus tax.\"\"\"\n    return price * (1 + rate)\n")},
            name="shop")
        http_port = settings_env["WEAVIATE_URL"].rsplit(":", 1)[1]
        db_url = f"sqlite:///{tmp_path / 'coderag.db'}"
        env = {k: v for k, v in settings_env.items() if not k.startswith(("SLACK_", "CODERAG_TEAMS"))}
        env.update(PLANTED)
        env.update(
            PYTHONPATH=str(ROOT), CODERAG_DATABASE_URL=db_url, CODERAG_LOG_LEVEL="DEBUG",
            WEAVIATE_URL=f"http://coderag:{WEAVIATE_PASSWORD}@127.0.0.1:{http_port}",
            VOYAGE_BASE_URL=voyage.base_url, ANTHROPIC_BASE_URL=anthropic.base_url,
            SLACK_API_URL=slack.api_url,
            CODERAG_REPOS=json.dumps([{"name": "locked", "url": f"https://deploy:{REPO_PASSWORD}@127.0.0.1:9/x.git"}]),
            CODERAG_CONFLUENCE_EMAIL="ops@example.com",
            CODERAG_METRICS_PORT=str(free_port()), CODERAG_SCHEDULER="off")

        r = _cli(env, "index", str(code), "--name", "shop")
        assert r.returncode == 0, r.stderr
        seen.append(("index", r.stdout + r.stderr))
        r = _cli(env, "sync", "repo", "locked")
        assert r.returncode != 0
        seen.append(("sync repo", r.stdout + r.stderr))
        for args in (["status"], ["status", "--json"], ["ask", "where is the price with tax computed?"],
                     ["search", "price with tax", "--json"]):
            r = _cli(env, *args)
            assert r.returncode == 0, (args, r.stderr)
            seen.append((" ".join(args), r.stdout + r.stderr))
        status_json = json.loads(seen[3][1].splitlines()[0])
        locked = next(x for x in status_json["sources"] if x["name"] == "locked")
        assert "127.0.0.1:9" in locked["last_error"]  # the failure is reported, the password is not
        bad = dict(env, WEAVIATE_URL=f"http://coderag:{WEAVIATE_PASSWORD}@127.0.0.1:9", WEAVIATE_GRPC_PORT="10")
        for args in (["status", "--json"], ["search", "x"]):
            r = _cli(bad, *args)
            assert r.returncode != 0
            seen.append(("unreachable weaviate " + " ".join(args), r.stdout + r.stderr))

        # --- a real `coderag serve`, its log (DEBUG) in a file
        log_path = tmp_path / "serve.log"
        with log_path.open("w") as log_file, \
                serve_process(env, stdout=log_file, output=log_path.read_text) as (_proc, base):
            serve_problem, scraped = None, None  # failures while driving serve: reported after the grep
            try:
                with httpx.Client(timeout=30) as http:
                    # bad signature, broken JSON, a signed mention answered by Claude, a slash command
                    body = json.dumps({"type": "event_callback", "event": {"text": "x"}})
                    seen.append(("forged", http.post(f"{base}/slack/events", content=body, headers={
                        "Content-Type": "application/json", **sign("wrong", body)}).text))
                    seen.append(("broken", http.post(f"{base}/slack/events", content="{", headers={
                        "Content-Type": "application/json", **sign(PLANTED["SLACK_SIGNING_SECRET"], "{")}).text))
                    ts = slack.next_ts()
                    mention = json.dumps({"type": "event_callback", "team_id": TEAM_ID, "event_id": "EvPLANT1",
                                          "event": {"type": "app_mention", "user": "U0PLANT01", "ts": ts,
                                                    "channel": "C0PLANT01", "event_ts": ts,
                                                    "text": f"<@{BOT_USER_ID}> where is the price with tax computed?"}})
                    r = http.post(f"{base}/slack/events", content=mention, headers={
                        "Content-Type": "application/json", **sign(PLANTED["SLACK_SIGNING_SECRET"], mention)})
                    assert r.status_code == 200
                    slack.wait_for(lambda: [c for c in slack.posts() if c.body.get("blocks")], timeout=60)
                    # a push for the repo with a password in its URL: the re-index fails
                    r = post_github(base, PLANTED["CODERAG_GITHUB_WEBHOOK_SECRET"], push_payload("locked"))
                    assert r.status_code == 202, r.text
                    seen.append(("forged webhook", post_github(base, "nope", push_payload("locked")).text))
                    seen.append(("readyz", http.get(f"{base}/readyz").text))
                    metrics_port = env["CODERAG_METRICS_PORT"]
                    try:
                        scraped = http.get(f"http://127.0.0.1:{metrics_port}/metrics", headers={
                            "Authorization": f"Bearer {PLANTED['CODERAG_METRICS_TOKEN']}"})
                        seen.append(("metrics", scraped.text))
                    except httpx.HTTPError as exc:  # checked below, after every output is collected
                        scraped = exc
            except Exception as exc:  # noqa: BLE001
                serve_problem = exc
            deadline = time.time() + 60
            while "re-index failed" not in log_path.read_text() and time.time() < deadline:
                time.sleep(0.3)
        serve_log = log_path.read_text()
        seen.append(("serve log", serve_log))
        serve_logged = ("re-index failed" in serve_log and "Traceback" in serve_log,  # the sync failure
                        "signature" in serve_log and "refused with 401" in serve_log)  # the forged request
        r = _cli(env, "status", "--json")
        seen.append(("status --json after serve", r.stdout + r.stderr))
        dump = _database_dump(db_url)
        seen.append(("database", dump))
        recorded = ("127.0.0.1:9" in r.stdout,  # the failed sync is reported, with the URL redacted
                    "queries:" in dump and "index_state:" in dump)
        # what went out to Slack (messages, reactions)
        seen.append(("slack calls", json.dumps([c.body for c in slack.calls])))
    finally:
        slack.stop()
        voyage.server.shutdown()
        anthropic.close()
    seen.append(("pytest log", "\n".join(r.getMessage() + (str(r.exc_info) if r.exc_info else "")
                                         for r in caplog.records)))
    leaks = [leak for where, t in seen for leak in _leaks(where, t)]
    assert leaks == []
    assert serve_problem is None, serve_problem
    assert serve_logged == (True, True), serve_logged
    assert recorded == (True, True), recorded
    assert scraped is not None and not isinstance(scraped, Exception) and scraped.status_code == 200, scraped
