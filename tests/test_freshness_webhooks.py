"""Webhook verification and routing (GitHub HMAC, GitLab token), config parsing, and
`coderag serve` refusing to start with nothing configured."""
from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient


def _app(queued, **cfg):
    from indexer.freshness.config import FreshnessConfig, RepoConfig
    from indexer.freshness.webhooks import webhook_routes_for

    config = FreshnessConfig(repos=(RepoConfig("api", "/srv/git/api.git", "main", aliases=("acme/api",)),), **cfg)
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
    from indexer import BadInput
    from indexer.freshness.config import FreshnessConfig

    cfg = FreshnessConfig.from_env({"CODERAG_REPOS": '[{"name": "a", "url": "/x", "branch": "dev"}]',
                                    "CODERAG_GITHUB_WEBHOOK_SECRET": "s"})
    assert cfg.repos[0].branch == "dev" and cfg.webhooks_enabled
    f = tmp_path / "repos.yaml"
    f.write_text("repos:\n  - name: b\n    url: https://example.invalid/b.git\n    url_template: 'u/{path}'\n")
    cfg = FreshnessConfig.from_env({"CODERAG_REPOS": str(f)})
    assert cfg.repos[0].name == "b" and cfg.repos[0].branch == "main" and not cfg.webhooks_enabled
    with pytest.raises(BadInput):
        FreshnessConfig.from_env({"CODERAG_REPOS": '[{"name": "a"}]'})
    with pytest.raises(BadInput, match="credentials"):
        FreshnessConfig.from_env({"CODERAG_CONFLUENCE_URL": "https://x.atlassian.net/wiki"})


def test_serve_with_nothing_configured_fails_clearly(tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "CODERAG_"))}
    env["CODERAG_HOME"] = str(tmp_path)
    p = subprocess.run([sys.executable, "-m", "bot.cli", "serve"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode != 0 and "nothing to serve" in p.stderr
