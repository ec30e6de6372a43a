"""``POST /webhooks/github`` and ``POST /webhooks/gitlab``: verify, queue, answer 202.

GitHub: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`` keyed with
``CODERAG_GITHUB_WEBHOOK_SECRET``, compared with :func:`hmac.compare_digest`. GitLab:
``X-Gitlab-Token`` equal (constant time) to ``CODERAG_GITLAB_WEBHOOK_TOKEN``. A missing
or wrong signature/token gets 401 before the body is parsed, and changes nothing.

Responses (JSON): ``202 {"queued": repo}`` for a push to a configured repo's configured
branch; ``200 {"ignored": reason}`` for other branches, unknown repos, other events;
``200 {"pong": true}`` for GitHub's ``ping``; ``400`` for a body that is not JSON.
The push payload only names the repo: the commit range indexed is read from the SQL
state and the mirror, never from the payload.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from .config import FreshnessConfig

log = logging.getLogger(__name__)


def github_signature(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify_github(secret: str, body: bytes, header: str | None) -> bool:
    """Constant-time check of a GitHub signature header (False when missing)."""
    if not secret or not header:
        return False
    return hmac.compare_digest(github_signature(secret, body).encode(), header.strip().encode())


def verify_gitlab(token: str, header: str | None) -> bool:
    """Constant-time check of ``X-Gitlab-Token`` (False when missing)."""
    if not token or not header:
        return False
    return hmac.compare_digest(token.encode(), header.encode())


def _identifiers(repo_obj: dict) -> set[str]:
    keys = ("name", "full_name", "path_with_namespace", "clone_url", "ssh_url", "git_url", "html_url",
            "git_http_url", "git_ssh_url", "http_url", "url", "web_url")
    return {str(repo_obj[k]) for k in keys if isinstance(repo_obj.get(k), str) and repo_obj.get(k)}


def route_push(config: FreshnessConfig, repo_obj: dict, ref: str) -> tuple[str | None, str]:
    """``(repo name, "")`` when the push should be indexed, else ``(None, reason)``."""
    ids = _identifiers(repo_obj or {})
    for repo in config.repos:
        if repo.matches(ids):
            if ref != f"refs/heads/{repo.branch}":
                return None, f"ref {ref} is not the configured branch {repo.branch}"
            return repo.name, ""
    return None, "repository not configured"


def webhook_routes_for(config: FreshnessConfig, enqueue) -> list[BaseRoute]:
    """The webhook routes; ``enqueue(repo_name, reason)`` must return at once."""
    routes: list[BaseRoute] = []

    def _push(repo_obj: dict, ref: str, source: str) -> JSONResponse:
        name, why = route_push(config, repo_obj, ref)
        if name is None:
            return JSONResponse({"ignored": why})
        enqueue(name, f"{source} push to {ref}")
        return JSONResponse({"queued": name}, status_code=202)

    def _json(body: bytes):
        try:
            data = json.loads(body or b"{}")
        except (ValueError, UnicodeDecodeError):
            return None
        return data if isinstance(data, dict) else None

    if config.github_secret:
        async def github(request: Request) -> JSONResponse:
            body = await request.body()
            if not verify_github(config.github_secret, body, request.headers.get("x-hub-signature-256")):
                log.warning("github webhook: bad or missing signature from %s", request.client)
                return JSONResponse({"error": "bad signature"}, status_code=401)
            event = request.headers.get("x-github-event", "")
            if event == "ping":
                return JSONResponse({"pong": True})
            if event != "push":
                return JSONResponse({"ignored": f"event {event or '(none)'}"})
            data = _json(body)
            if data is None:
                return JSONResponse({"error": "body is not a JSON object"}, status_code=400)
            return _push(data.get("repository") or {}, str(data.get("ref") or ""), "github")

        routes.append(Route("/webhooks/github", github, methods=["POST"]))

    if config.gitlab_token:
        async def gitlab(request: Request) -> JSONResponse:
            body = await request.body()
            if not verify_gitlab(config.gitlab_token, request.headers.get("x-gitlab-token")):
                log.warning("gitlab webhook: bad or missing token from %s", request.client)
                return JSONResponse({"error": "bad token"}, status_code=401)
            event = request.headers.get("x-gitlab-event", "")
            if event != "Push Hook":
                return JSONResponse({"ignored": f"event {event or '(none)'}"})
            data = _json(body)
            if data is None:
                return JSONResponse({"error": "body is not a JSON object"}, status_code=400)
            return _push(data.get("project") or data.get("repository") or {}, str(data.get("ref") or ""), "gitlab")

        routes.append(Route("/webhooks/gitlab", gitlab, methods=["POST"]))
    return routes


def webhook_routes(ctx) -> list[BaseRoute]:
    """Route provider for ``bot.server.ROUTE_PROVIDERS``: ``[]`` unless repos and a
    webhook secret are configured; otherwise starts the process's freshness runtime."""
    from .runtime import runtime_for_server

    runtime = runtime_for_server(ctx)
    if runtime is None or not runtime.config.webhooks_enabled:
        return []
    return webhook_routes_for(runtime.config, runtime.workers.request)
