"""Webhook verification and routing (GitHub HMAC, GitLab token), config parsing, and
`coderag serve` refusing to start with nothing configured."""
from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient


def _app(queued, **cfg):
    from common.settings import FreshnessSettings
    from common.sources import RepoConfig
    from indexer.freshness.webhooks import webhook_routes_for

    api = RepoConfig("api", "/srv/git/api.git", "main", aliases=("acme/api",))
    config = FreshnessSettings.from_env({}, repos=(api,), **cfg)
    return TestClient(Starlette(routes=webhook_routes_for(config, lambda n, why: queued.append(n))))


def test_github_signature_is_checked_in_constant_time():
    from indexer.freshness.webhooks import github_signature, verify_github

    body = b'{"a": 1}'
    sig = github_signature("k", body)
    assert verify_github("k", body, sig)
    assert not verify_github("k", body + b" ", sig)
    assert not verify_github("k", body, None)
    assert not verify_github("", body, sig)


def test_gitlab_token_and_push_routing():
    queued: list[str] = []
    client = _app(queued, gitlab_token="tok")
    push = {"ref": "refs/heads/main", "project": {"path_with_namespace": "acme/api", "name": "api"}}
    assert client.post("/webhooks/gitlab", json=push, headers={"X-Gitlab-Event": "Push Hook"}).status_code == 401
    assert client.post("/webhooks/gitlab", json=push, headers={"X-Gitlab-Event": "Push Hook",
                                                               "X-Gitlab-Token": "nope"}).status_code == 401
    assert queued == []
    r = client.post("/webhooks/gitlab", json=push, headers={"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "tok"})
    assert r.status_code == 202 and r.json() == {"queued": "api"} and queued == ["api"]
    r = client.post("/webhooks/gitlab", json=dict(push, ref="refs/heads/dev"),
                    headers={"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "tok"})
    assert r.status_code == 200 and "ignored" in r.json() and queued == ["api"]
    assert client.post("/webhooks/github", json=push).status_code == 404  # no GitHub secret: no route


def test_github_matches_clone_url_and_rejects_bad_json():
    from indexer.freshness.webhooks import github_signature

    queued: list[str] = []
    client = _app(queued, github_secret="k")
    body = json.dumps({"ref": "refs/heads/main", "repository": {"clone_url": "/srv/git/api"}}).encode()
    r = client.post("/webhooks/github", content=body, headers={"X-GitHub-Event": "push",
                                                               "X-Hub-Signature-256": github_signature("k", body)})
    assert r.status_code == 202 and queued == ["api"]
    bad = b"not json"
    r = client.post("/webhooks/github", content=bad, headers={"X-GitHub-Event": "push",
                                                              "X-Hub-Signature-256": github_signature("k", bad)})
    assert r.status_code == 400


def test_repos_config_inline_json_and_yaml_file(tmp_path):
    from common.errors import BadInput
    from common.settings import load

    cfg = load({"CODERAG_REPOS": '[{"name": "a", "url": "/x", "branch": "dev"}]',
                "CODERAG_GITHUB_WEBHOOK_SECRET": "s"}).freshness
    assert cfg.repos[0].branch == "dev" and cfg.webhooks_enabled
    f = tmp_path / "repos.yaml"
    f.write_text("repos:\n  - name: b\n    url: https://example.invalid/b.git\n    url_template: 'u/{path}'\n")
    cfg = load({"CODERAG_REPOS": str(f)}).freshness
    assert cfg.repos[0].name == "b" and cfg.repos[0].branch == "main" and not cfg.webhooks_enabled
    expected = 'must be a JSON list of repos [{"name", "url", ...}] or a .json/.yaml file holding it, got'
    # A list of repos with one bad entry names just that entry; any other value is shown (redacted).
    for raw, problem in (('[{"name": "a"}]', 'repo #1 needs a "name" and a "url"'),
                         ('[{"name": "a", "url": "/x"}, {"name": "a", "url": "/y"}]', "repo names must be unique")):
        with pytest.raises(BadInput) as info:
            load({"CODERAG_REPOS": raw})  # at start-up, one line naming the variable
        assert str(info.value) == f"CODERAG_REPOS: {problem}"
    for raw, problem in (('{"repos": 1}', "not a list of repos"), (str(tmp_path / "none.json"), "no such file")):
        with pytest.raises(BadInput) as info:
            load({"CODERAG_REPOS": raw})
        assert str(info.value) == f"CODERAG_REPOS {expected} {raw!r}: {problem}"
    half = load({"CODERAG_CONFLUENCE_URL": "https://x.atlassian.net/wiki/"})  # read; its credentials checked on use
    assert half.freshness.confluence is half.confluence and half.confluence.url == "https://x.atlassian.net/wiki"
    with pytest.raises(BadInput, match="CODERAG_CONFLUENCE_URL is set but no credentials"):
        half.freshness.check()
    assert load({}).freshness.confluence is None and load({}).freshness.check() is None


def test_confluence_spaces_are_parsed_with_the_groups_ttl():
    from common.errors import BadInput
    from common.settings import load
    from common.sources import SpaceConfig

    env = {"CODERAG_CONFLUENCE_URL": "https://x/wiki", "CODERAG_CONFLUENCE_PAT": "p",
           "CODERAG_CONFLUENCE_TTL_HOURS": "6"}
    c = load(dict(env, CODERAG_CONFLUENCE_SPACES=" OPS, DEV ,")).freshness.confluence
    assert c.spaces == (SpaceConfig("OPS", 6.0), SpaceConfig("DEV", 6.0)) and not c.cloud
    assert c.space("DEV").key == "DEV"
    c = load(dict(env, CODERAG_CONFLUENCE_SPACES='["OPS", {"key": "Q", "ttl_hours": 2, "cql": "label=x"}]')).confluence
    assert c.spaces == (SpaceConfig("OPS", 6.0), SpaceConfig("Q", 2.0, "label=x"))
    with pytest.raises(BadInput, match="not configured"):
        c.space("NOPE")
    for raw, problem in (('[{"cql": "x"}]', 'space #1 needs a "key"'),
                         ('[{"key": "Q", "ttl_hours": "soon"}]', "ttl_hours of 'Q' must be a number")):
        with pytest.raises(BadInput) as info:
            load(dict(env, CODERAG_CONFLUENCE_SPACES=raw))
        assert str(info.value) == f"CODERAG_CONFLUENCE_SPACES: {problem}"


def test_serve_with_nothing_configured_fails_clearly(tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "CODERAG_"))}
    env["CODERAG_HOME"] = str(tmp_path)
    p = subprocess.run([sys.executable, "-m", "bot.cli", "serve"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode != 0 and "nothing to serve" in p.stderr


# --- body size cap (413 before reading / while streaming) over real HTTP -------------

SECRET = "k"


@pytest.fixture
def capped_server():
    """The webhook routes (GitHub + GitLab) with a 4 KiB body cap, served by uvicorn on
    127.0.0.1 in a thread. Yields ``(url, queued)``; ``queued`` lists enqueued repos."""
    from helpers.http_server import BackgroundServer
    from common.settings import FreshnessSettings
    from common.sources import RepoConfig
    from indexer.freshness.webhooks import webhook_routes_for

    queued: list[str] = []
    api = RepoConfig("api", "/srv/git/api.git", "main", aliases=("acme/api",))
    config = FreshnessSettings.from_env({}, repos=(api,), github_secret=SECRET, gitlab_token="tok",
                                        webhook_max_bytes=4096)
    server = BackgroundServer(Starlette(routes=webhook_routes_for(config, lambda n, why: queued.append(n)))).start()
    try:
        yield server.url, queued
    finally:
        server.stop()


def _raw_exchange(url: str, head: bytes, body_parts=(), timeout: float = 10.0) -> tuple[int, bytes]:
    """Send ``head`` then ``body_parts`` on a raw socket WITHOUT finishing the body, and
    read the response. The server must answer from what it has: a server that waits for
    the rest of the body times out here (``socket.timeout``), failing the test."""
    import socket
    from urllib.parse import urlsplit

    u = urlsplit(url)
    with socket.create_connection((u.hostname, u.port), timeout=timeout) as s:
        s.sendall(head)
        for part in body_parts:
            s.sendall(part)
        data = b""
        while b"\r\n\r\n" not in data or len(data) < data.index(b"\r\n\r\n") + 4 + _content_length(data):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data


def _content_length(data: bytes) -> int:
    head = data.split(b"\r\n\r\n", 1)[0].lower()
    for line in head.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


def _push_body(pad: int = 0) -> bytes:
    return json.dumps({"ref": "refs/heads/main", "repository": {"full_name": "acme/api"},
                       "project": {"path_with_namespace": "acme/api"}, "pad": "x" * pad}).encode()


def test_oversize_content_length_is_413_before_reading_and_queues_nothing(capped_server):
    from indexer.freshness.webhooks import github_signature

    url, queued = capped_server
    body = _push_body(pad=10_000)  # a validly signed push, just too big
    # Declares 2 GB and sends only a few bytes of it: the answer must come from the header.
    head = (b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"X-GitHub-Event: push\r\nX-Hub-Signature-256: " + github_signature(SECRET, body).encode() +
            b"\r\nContent-Length: 2147483648\r\n\r\n")
    status, raw = _raw_exchange(url, head, [body[:100]])
    assert status == 413, raw
    assert b"connection: close" in raw.lower()
    head = (b"POST /webhooks/gitlab HTTP/1.1\r\nHost: x\r\nX-Gitlab-Event: Push Hook\r\nX-Gitlab-Token: tok\r\n"
            b"Content-Length: 2147483648\r\n\r\n")
    assert _raw_exchange(url, head, [body[:100]])[0] == 413
    # A complete, correctly signed body over the cap (real client, real Content-Length).
    import httpx

    r = httpx.post(f"{url}/webhooks/github", content=body, timeout=30,
                   headers={"X-GitHub-Event": "push", "X-Hub-Signature-256": github_signature(SECRET, body)})
    assert r.status_code == 413 and "4096" in r.json()["error"]
    assert queued == []


def test_chunked_oversize_body_is_413_as_soon_as_the_cap_is_passed(capped_server):
    import httpx

    from indexer.freshness.webhooks import github_signature

    url, queued = capped_server
    # Chunked, no Content-Length, and the terminating 0-chunk is never sent: the server
    # must stop reading once 4 KiB have arrived instead of waiting for the end.
    head = (b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: push\r\n"
            b"X-Hub-Signature-256: sha256=00\r\nTransfer-Encoding: chunked\r\n\r\n")
    parts = [b"400\r\n" + b"a" * 1024 + b"\r\n" for _ in range(6)]  # 6 KiB > 4 KiB
    status, raw = _raw_exchange(url, head, parts)
    assert status == 413, raw
    head = (b"POST /webhooks/gitlab HTTP/1.1\r\nHost: x\r\nX-Gitlab-Event: Push Hook\r\nX-Gitlab-Token: tok\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    assert _raw_exchange(url, head, parts)[0] == 413
    # httpx sends a generator body chunked; even a correctly signed push is refused.
    body = _push_body(pad=10_000)

    def gen():
        for i in range(0, len(body), 1000):
            yield body[i:i + 1000]

    r = httpx.post(f"{url}/webhooks/github", content=gen(), timeout=30,
                   headers={"X-GitHub-Event": "push", "X-Hub-Signature-256": github_signature(SECRET, body)})
    assert r.status_code == 413 and "content-length" not in r.request.headers
    assert queued == []


def test_signed_push_under_the_cap_is_still_queued(capped_server):
    import httpx

    from indexer.freshness.webhooks import github_signature

    url, queued = capped_server
    body = _push_body(pad=1000)
    r = httpx.post(f"{url}/webhooks/github", content=body, timeout=30,
                   headers={"X-GitHub-Event": "push", "X-Hub-Signature-256": github_signature(SECRET, body)})
    assert r.status_code == 202 and r.json() == {"queued": "api"} and queued == ["api"]

    def gen():  # chunked and under the cap: accepted too
        yield body[:500]
        yield body[500:]

    r = httpx.post(f"{url}/webhooks/github", content=gen(), timeout=30,
                   headers={"X-GitHub-Event": "push", "X-Hub-Signature-256": github_signature(SECRET, body)})
    assert r.status_code == 202 and queued == ["api", "api"]
    r = httpx.post(f"{url}/webhooks/gitlab", content=body, timeout=30,
                   headers={"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "tok"})
    assert r.status_code == 202 and queued == ["api", "api", "api"]
    # An unauthenticated GitLab post is refused without its body being read.
    r = httpx.post(f"{url}/webhooks/gitlab", content=body, timeout=30, headers={"X-Gitlab-Event": "Push Hook"})
    assert r.status_code == 401 and queued == ["api", "api", "api"]


def test_webhook_max_bytes_config():
    from common.errors import BadInput
    from common.settings import FreshnessSettings

    assert FreshnessSettings.from_env({}).webhook_max_bytes == 25 * 1024 * 1024
    assert FreshnessSettings.from_env({"CODERAG_WEBHOOK_MAX_BYTES": "1048576"}).webhook_max_bytes == 1048576
    for bad in ("lots", "0", "-5"):
        with pytest.raises(BadInput, match="CODERAG_WEBHOOK_MAX_BYTES"):
            FreshnessSettings.from_env({"CODERAG_WEBHOOK_MAX_BYTES": bad})
