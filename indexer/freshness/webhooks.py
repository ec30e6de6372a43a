"""``POST /webhooks/github`` and ``POST /webhooks/gitlab``: verify, queue, answer 202.

GitHub: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`` keyed with
``CODERAG_GITHUB_WEBHOOK_SECRET``, compared with :func:`hmac.compare_digest`. GitLab:
``X-Gitlab-Token`` equal (constant time) to ``CODERAG_GITLAB_WEBHOOK_TOKEN``. A missing
or wrong signature/token gets 401 before the body is parsed, and changes nothing.

Responses (JSON): ``202 {"queued": repo}`` for a push to a configured repo's configured
branch, or to one of its named refs (a tag a ``refs`` pattern matches, a branch ``refs``
names: the run brings the repo's ref sources up to date, :mod:`indexer.sources.refs`;
GitLab's ``Tag Push Hook`` too, once some repo has ``refs``); ``200 {"ignored": reason}``
for other branches, unknown repos, other events; ``200 {"pong": true}`` for GitHub's ``ping``; ``400`` for a body that is not JSON.
The push payload only names the repo: the commit range indexed is read from the SQL
state and the mirror, never from the payload.

Body size: a request whose body is larger than ``FreshnessSettings.webhook_max_bytes``
(``CODERAG_WEBHOOK_MAX_BYTES``, default 25 MiB: GitHub caps webhook payloads at 25 MB)
gets ``413 {"error": ...}`` with ``Connection: close`` and queues nothing. A declared
``Content-Length`` over the cap is refused before any byte of the body is read; otherwise
the body is streamed and reading stops as soon as the cap is passed (chunked bodies
included), so an unsigned multi-GB POST costs at most the cap in memory.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from common.http_body import (BadContentLength, BodyRefused, BodyTooLarge,  # noqa: F401  (re-exported)
                              check_content_length, read_body_capped)
from common.settings import FreshnessSettings

log = logging.getLogger(__name__)


def _refused(source: str, request: Request, exc: BodyRefused) -> JSONResponse:
    log.warning("%s webhook: %s from %s: refused with %d", source, exc, request.client, exc.status)
    return JSONResponse({"error": str(exc)}, status_code=exc.status, headers={"Connection": "close"})


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


def route_push(config: FreshnessSettings, repo_obj: dict, ref: str) -> tuple[str | None, str]:
    """``(repo name, "")`` when the push should be indexed, else ``(None, reason)``."""
    ids = _identifiers(repo_obj or {})
    for repo in config.repos:
        if repo.matches(ids):
            if ref != f"refs/heads/{repo.branch}" and not _named_ref(repo, ref):
                return None, f"ref {ref} is not the configured branch {repo.branch}"
            return repo.name, ""  # a named ref's push (a tag, a release branch) syncs the repo's refs
    return None, "repository not configured"


def _named_ref(repo, ref: str) -> bool:
    """True when ``ref`` (``refs/tags/v2``, ``refs/heads/release/4.x``) is one of the
    repo's named refs: a tag a ``refs`` pattern matches, or a branch ``refs`` names."""
    import fnmatch

    if ref.startswith("refs/tags/"):
        return any(fnmatch.fnmatchcase(ref[len("refs/tags/"):], p) for p in repo.refs)
    return ref.startswith("refs/heads/") and ref[len("refs/heads/"):] in repo.refs


def webhook_routes_for(config: FreshnessSettings, enqueue) -> list[BaseRoute]:
    """The webhook routes; ``enqueue(repo_name, reason)`` must return at once.

    Bodies larger than ``config.webhook_max_bytes`` are answered 413 and never enqueued
    (see the module docstring). Only the routes whose secret/token is set are returned.
    """
    routes: list[BaseRoute] = []
    limit = config.webhook_max_bytes

    def _push(repo_obj: dict, ref: str, source: str) -> JSONResponse:
        name, why = route_push(config, repo_obj, ref)
        if name is None:
            return JSONResponse({"ignored": why})
        enqueue(name, f"{source} push to {ref}")
        return JSONResponse({"queued": name}, status_code=202)

    def _push_of(data: dict, repo_keys: tuple[str, ...], source: str) -> JSONResponse:
        """Route a push payload; 400 when its ``ref`` is not a string or its repository
        (the first of ``repo_keys`` present) is not an object."""
        repo_obj = next((data[k] for k in repo_keys if data.get(k) is not None), {})
        ref = data.get("ref", "")
        if not isinstance(repo_obj, dict) or not isinstance(ref, str):
            log.warning("%s webhook: push payload of the wrong shape (ref %s, %s %s): refused with 400", source,
                        type(ref).__name__, repo_keys[0], type(repo_obj).__name__)
            return JSONResponse({"error": "push payload needs \"ref\" (string) and \"%s\" (object)"
                                 % repo_keys[0]}, status_code=400)
        return _push(repo_obj, ref, source)

    def _json(body: bytes):
        try:
            data = json.loads(body or b"{}")
        except (ValueError, UnicodeDecodeError):
            return None
        return data if isinstance(data, dict) else None

    if config.github_secret:
        async def github(request: Request) -> JSONResponse:
            try:  # the signature covers the body: read it, but never more than the cap
                body = await read_body_capped(request, limit)
            except BodyRefused as exc:
                return _refused("github", request, exc)
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
            return _push_of(data, ("repository",), "github")

        routes.append(Route("/webhooks/github", github, methods=["POST"]))

    if config.gitlab_token:
        async def gitlab(request: Request) -> JSONResponse:
            try:
                check_content_length(request, limit)
            except BodyRefused as exc:
                return _refused("gitlab", request, exc)
            # The token is a header: check it before reading any of the body.
            if not verify_gitlab(config.gitlab_token, request.headers.get("x-gitlab-token")):
                log.warning("gitlab webhook: bad or missing token from %s", request.client)
                return JSONResponse({"error": "bad token"}, status_code=401)
            try:
                body = await read_body_capped(request, limit)
            except BodyRefused as exc:
                return _refused("gitlab", request, exc)
            event = request.headers.get("x-gitlab-event", "")
            tags = any(r.refs for r in config.repos)  # a tag push matters only to named refs
            if event != "Push Hook" and not (tags and event == "Tag Push Hook"):
                return JSONResponse({"ignored": f"event {event or '(none)'}"})
            data = _json(body)
            if data is None:
                return JSONResponse({"error": "body is not a JSON object"}, status_code=400)
            return _push_of(data, ("project", "repository"), "gitlab")

        routes.append(Route("/webhooks/gitlab", gitlab, methods=["POST"]))
    return routes


def webhook_routes(runtime) -> list[BaseRoute]:
    """The webhook routes of a :class:`~indexer.freshness.runtime.FreshnessRuntime`:
    ``[]`` unless repos and a webhook secret are configured; pushes are queued on the
    runtime's repo workers."""
    if runtime is None or not runtime.config.webhooks_enabled:
        return []
    return webhook_routes_for(runtime.config, runtime.workers.request)
