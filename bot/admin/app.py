"""The ``/admin`` application: every route, who may call it, and the pages.

:data:`PUBLIC` lists the only routes an anonymous request reaches (the sign-in pages);
every other route goes through :meth:`AdminSite.guard`: no session → 401 (a GET gets the
sign-in page with it), a signed-in non-admin → 403, a POST without the session's CSRF
token → 403. ``tests/integration/test_admin_access.py`` walks :attr:`AdminSite.routes` to prove it.

Pages: sources (configured and indexed, re-sync, add, remove), channels (allow-list and
reply mode per channel), questions (the query log with filters), gaps (no coverage and
👎 with reasons; export as golden cases), drift, health (Weaviate, database, queue,
scheduler), reviews (drafts of ``review`` channels), changes (the change log).
"""
from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from common.errors import BadInput
from common.redact import redact_text

from ..runconfig.drafts import DraftStore
from ..runconfig.models import REPLY_MODES
from ..runconfig.store import REVIEW_CHANNEL, RunConfig, SourceEntry
from . import auth

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).with_name("templates")
SESSION_KEY_NAME = "admin_session_key"
#: Paths an anonymous request may reach (relative to ``/admin``).
PUBLIC = frozenset({"/login", "/login/slack", "/login/slack/callback"})
NAV = (("sources", "Sources"), ("channels", "Channels"), ("questions", "Questions"), ("gaps", "Gaps & 👎"),
       ("drift", "Drift"), ("health", "Health"), ("reviews", "Reviews"), ("changes", "Changes"))


@dataclass
class AdminDeps:
    """What the admin page reads and changes: the SQL ``sessions`` (migrated), the
    settings read at start-up (``app``: every group; ``admin``: the admin group), and
    what this process runs (``store``: the index, for health; ``slack_client``: posts
    approved Slack drafts and review notices; ``teams``: posts approved Teams drafts;
    ``freshness``: the freshness runtime when this process has one)."""

    sessions: Any
    app: Any
    admin: Any
    store: Any = None
    slack_client: Any = None
    freshness: Any = None
    #: The Teams agent (:class:`bot.teams.app.TeamsBot`) when this process serves Teams: posts approved Teams drafts.
    teams: Any = None
    #: How a re-sync runs (default :func:`run_sync`); tests hand their own to count calls.
    sync: Callable[..., Any] | None = None


def session_key(deps: AdminDeps) -> str:
    """``CODERAG_ADMIN_SESSION_SECRET``, else a key generated once and kept in the
    database (``app_secrets``), so every replica and restart signs alike."""
    if deps.admin.session_secret:
        return deps.admin.session_secret
    from sqlalchemy.exc import IntegrityError

    from ..querylog.models import AppSecret

    with deps.sessions() as s:
        row = s.get(AppSecret, SESSION_KEY_NAME)
        if row is not None:
            return row.value
    try:
        with deps.sessions() as s, s.begin():
            s.add(AppSecret(name=SESSION_KEY_NAME, value=secrets.token_hex(32), created_at=datetime.now(timezone.utc)))
    except IntegrityError:
        pass
    with deps.sessions() as s:
        return s.get(AppSecret, SESSION_KEY_NAME).value


def run_sync(deps: AdminDeps, name: str, kind: str) -> str:
    """Re-sync one configured source now, through the use case ``coderag sync`` runs
    (:func:`indexer.sync_repo_now` / :func:`indexer.sync_confluence_now`), with the
    repositories and spaces configured in the database; returns a one-line summary."""
    import indexer

    deps.app.freshness.check()
    config = RunConfig(deps.sessions).freshness(deps.app.freshness)
    if kind == "confluence":
        result = indexer.sync_confluence_now(name, config=config, settings=deps.app.core)
    else:
        result = indexer.sync_repo_now(name, config=config, settings=deps.app.core)
    data = result.to_dict() if hasattr(result, "to_dict") else {}
    if data.get("mode") == "queued":
        return f"queued as job {data.get('job')}" if data.get("job") else "a run was already waiting"
    if kind == "confluence":
        return f"{data.get('indexed', 0)} pages indexed, {data.get('deleted', 0)} deleted"
    return (f"{data.get('mode', 'sync')} to {str(data.get('commit') or '')[:7]}: {data.get('files_changed', 0)} "
            f"changed, {data.get('files_deleted', 0)} deleted")


def policy_form(entry: Any, known: set[str]) -> dict:
    """What the channel form holds: ``entry``'s policy (a :class:`ChannelEntry` being
    edited), else an empty form. ``sources``: the ticked names; ``other``: its sources
    that are not among the ``known`` ones (the free-text field)."""
    if entry is None:
        return {"channel": "", "list": "own", "sources": set(), "other": "", "reply_mode": "mention"}
    own = entry.sources is not None
    listed = set(entry.sources or ())
    return {"channel": entry.channel, "list": "own" if own else "inherit", "sources": listed & known,
            "other": ", ".join(sorted(listed - known)), "reply_mode": entry.reply_mode}


def _age(then: Any) -> str:
    if not then:
        return "never"
    from ..answer.extractive import age_text

    if isinstance(then, str):
        try:
            then = datetime.fromisoformat(then)
        except ValueError:
            return then
    return age_text(then)


class AdminSite:
    """The pages over ``deps``; :attr:`routes` are mounted at ``/admin``."""

    def __init__(self, deps: AdminDeps):
        self.deps = deps
        self.config = RunConfig(deps.sessions)
        self.drafts = DraftStore(deps.sessions)
        self.key = session_key(deps)
        self.gate = auth.Gate(deps.admin, self.key)
        self.templates = Jinja2Templates(directory=str(TEMPLATES))
        self.templates.env.globals.update(nav=NAV, reply_modes=REPLY_MODES, age=_age)
        self.syncing: dict[str, datetime] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="coderag-admin-sync")
        g = self.guard
        self.routes = [
            Route("/login", self.login, methods=["GET", "POST"]),
            Route("/login/slack", self.login_slack, methods=["GET"]),
            Route("/login/slack/callback", self.login_slack_callback, methods=["GET"]),
            Route("/logout", g(self.logout), methods=["POST"]),
            Route("/", g(self.home), methods=["GET"]),
            Route("/sources", g(self.sources), methods=["GET"]),
            Route("/sources/add", g(self.source_add), methods=["POST"]),
            Route("/sources/{name:path}/sync", g(self.source_sync), methods=["POST"]),
            Route("/sources/{name:path}/remove", g(self.source_remove), methods=["POST"]),
            Route("/channels", g(self.channels), methods=["GET"]),
            Route("/channels/set", g(self.channel_set), methods=["POST"]),
            Route("/channels/{channel}/remove", g(self.channel_remove), methods=["POST"]),
            Route("/questions", g(self.questions), methods=["GET"]),
            Route("/gaps", g(self.gaps), methods=["GET"]),
            Route("/gaps/export", g(self.gaps_export), methods=["POST"]),
            Route("/drift", g(self.drift), methods=["GET"]),
            Route("/health", g(self.health), methods=["GET"]),
            Route("/reviews", g(self.reviews), methods=["GET"]),
            Route("/reviews/channel", g(self.review_channel), methods=["POST"]),
            Route("/reviews/{draft_id:int}/decide", g(self.review_decide), methods=["POST"]),
            Route("/changes", g(self.changes), methods=["GET"]),
        ]

    # ------------------------------------------------------------------ plumbing
    def asgi(self) -> Starlette:
        """The Starlette app of :attr:`routes`, behind the session middleware and the
        security headers."""
        https = self.deps.admin.public_url.lower().startswith("https://")
        app = Starlette(routes=self.routes, middleware=[
            Middleware(SessionMiddleware, secret_key=self.key, session_cookie=auth.SESSION_COOKIE,
                       max_age=int(self.deps.admin.session_hours * 3600), path="/admin", same_site="lax",
                       https_only=https)])
        return _SecurityHeaders(app)

    def guard(self, handler: Callable[..., Awaitable[Response]]):
        """``handler`` for signed-in admins only (401 / 403), with the CSRF check on POST."""

        async def guarded(request: Request) -> Response:
            who = self.gate.identity(request)
            if who is None:
                if request.method == "GET":
                    return self._login_page(request, status=401)
                return PlainTextResponse("sign in first", status_code=401)
            if not self.gate.is_admin(who):
                return self.render(request, "denied.html", {"who": who}, status=403)
            form = None
            if request.method == "POST":
                form = await request.form()
                if not auth.check_csrf(request, form):
                    log.warning("admin: %s %s without a valid CSRF token: refused", request.method, request.url.path)
                    return PlainTextResponse("missing or wrong CSRF token", status_code=403)
            request.state.who, request.state.form = who, form
            return await handler(request)

        guarded.__name__ = getattr(handler, "__name__", "guarded")
        guarded.__doc__ = handler.__doc__
        return guarded

    def render(self, request: Request, name: str, context: dict | None = None, status: int = 200) -> Response:
        """``name`` with ``context``, the CSRF token, the signed-in identity and the flash messages."""
        ctx = {"csrf": auth.csrf_token(request), "who": self.gate.identity(request),
               "flash": request.session.pop("flash", []), "path": request.url.path}
        ctx.update(context or {})
        return self.templates.TemplateResponse(request, name, ctx, status_code=status)

    @staticmethod
    def flash(request: Request, text: str, kind: str = "ok") -> None:
        """A message for the next page."""
        request.session.setdefault("flash", []).append({"text": text, "kind": kind})
        request.session["flash"] = request.session["flash"]

    @staticmethod
    def back(to: str) -> Response:
        """303 to ``/admin{to}``."""
        return RedirectResponse(f"/admin{to}", status_code=303)

    # ------------------------------------------------------------------ sign-in
    def _login_page(self, request: Request, status: int = 200, error: str = "") -> Response:
        return self.render(request, "login.html", {"token_login": bool(self.deps.admin.named_tokens),
                                                   "slack_login": self.deps.admin.slack_login, "error": error},
                           status=status)

    async def login(self, request: Request) -> Response:
        """The sign-in page; POST: the token form."""
        if request.method == "GET":
            return self._login_page(request)
        form = await request.form()
        if not auth.check_csrf(request, form):
            return PlainTextResponse("missing or wrong CSRF token (reload the sign-in page)", status_code=403)
        try:
            who = self.gate.check_token(request, str(form.get("token") or ""))
        except auth.Throttled:
            return PlainTextResponse("too many wrong tokens; try again in a few minutes", status_code=429)
        if who is None:
            return self._login_page(request, status=401, error="That is not an admin token.")
        auth.sign_in(request, who)
        await run_in_threadpool(self.config.record, who.actor, "admin.sign_in", "token", {})
        return self.back("/")

    def _redirect_uri(self, request: Request) -> str:
        base = self.deps.admin.public_url.rstrip("/") or f"{request.url.scheme}://{request.url.netloc}"
        return f"{base}/admin/login/slack/callback"

    async def login_slack(self, request: Request) -> Response:
        """Start "Sign in with Slack": remember a state and nonce, go to Slack."""
        if not self.deps.admin.slack_login:
            return PlainTextResponse("Sign in with Slack is not configured", status_code=404)
        state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        request.session["oidc"] = {"state": state, "nonce": nonce}
        return RedirectResponse(auth.authorize_url(api_url=self.deps.app.slack.api_url,
                                                   client_id=self.deps.admin.slack_client_id,
                                                   redirect_uri=self._redirect_uri(request), state=state,
                                                   nonce=nonce), status_code=303)

    async def login_slack_callback(self, request: Request) -> Response:
        """Slack sent the user back: check the state, exchange the code, sign in."""
        if not self.deps.admin.slack_login:
            return PlainTextResponse("Sign in with Slack is not configured", status_code=404)
        pending = request.session.pop("oidc", None) or {}
        state = request.query_params.get("state") or ""
        import hmac

        if not pending.get("state") or not hmac.compare_digest(state.encode(), str(pending["state"]).encode()):
            return self._login_page(request, status=400, error="The Slack sign-in expired or was not started "
                                                               "here; try again.")
        if request.query_params.get("error") or not request.query_params.get("code"):
            return self._login_page(request, status=401, error="Slack did not sign you in.")
        try:
            who = await run_in_threadpool(
                auth.slack_identity, api_url=self.deps.app.slack.api_url, client_id=self.deps.admin.slack_client_id,
                client_secret=self.deps.admin.slack_client_secret, code=request.query_params["code"],
                redirect_uri=self._redirect_uri(request), nonce=str(pending.get("nonce") or ""))
        except auth.SignInFailed as exc:
            log.warning("admin: Slack sign-in failed: %s", exc)
            return self._login_page(request, status=401, error=str(exc))
        auth.sign_in(request, who)
        if not self.gate.is_admin(who):
            log.warning("admin: %s signed in with Slack but is not in CODERAG_ADMIN_USERS", who.id)
            return self.render(request, "denied.html", {"who": who}, status=403)
        await run_in_threadpool(self.config.record, who.actor, "admin.sign_in", "slack", {})
        return self.back("/")

    async def logout(self, request: Request) -> Response:
        """Sign out (the session is dropped)."""
        request.session.clear()
        return self.back("/login")

    async def home(self, request: Request) -> Response:
        """``/admin/``: the sources page."""
        return self.back("/sources")

    # ------------------------------------------------------------------ sources
    def _indexed(self) -> tuple[list[dict], str]:
        import indexer

        try:
            return indexer.index_status(self.deps.app.core), ""
        except Exception as exc:  # noqa: BLE001 - the page still shows the configuration
            return [], redact_text(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")[:300]

    async def sources(self, request: Request) -> Response:
        """Every configured and every indexed source, with its state and actions."""
        configured = await run_in_threadpool(self.config.sources)
        indexed, error = await run_in_threadpool(self._indexed)
        from indexer.read import vectors_percent

        by_name = {s["name"]: s for s in indexed}
        rows = []
        for e in configured:
            rows.append({"entry": e.public(), "status": by_name.pop(e.name, None), "configured": True})
        for name, st in sorted(by_name.items()):
            rows.append({"entry": {"name": name, "kind": st.get("kind") or "git", "origin": "indexed only"},
                         "status": st, "configured": False})
        for r in rows:
            st = r["status"] or {}
            # a first run that failed (or has not run) leaves state but no index: nothing to count
            r["indexed"] = bool(st.get("indexed_at"))
            r["vectors"] = vectors_percent(st) if r["indexed"] else None
            r["last_error"] = redact_text(st.get("last_error") or "")[:300]
            r["drift"] = (st.get("drift") or {}).get("stale", 0)
            r["syncing"] = r["entry"]["name"] in self.syncing
        return self.render(request, "sources.html", {"rows": rows, "error": error})

    async def source_add(self, request: Request) -> Response:
        """Add a repository or Confluence space (it is kept fresh from then on)."""
        f = request.state.form
        kind = str(f.get("kind") or "git")
        if kind == "confluence" and self.deps.app.freshness.confluence is None:
            self.flash(request, "Confluence is not configured: set CODERAG_CONFLUENCE_URL and its credentials "
                                "first (docs/operating/freshness.md).", "error")
            return self.back("/sources")
        try:
            ttl = float(f.get("ttl_hours")) if f.get("ttl_hours") else None
            aliases = tuple(a.strip() for a in str(f.get("aliases") or "").split(",") if a.strip())
            entry = SourceEntry(name=str(f.get("name") or ""), kind=kind, url=str(f.get("url") or ""),
                                branch=str(f.get("branch") or "main"), url_template=str(f.get("url_template") or ""),
                                aliases=aliases, ttl_hours=ttl, cql=str(f.get("cql") or ""))
            entry = await run_in_threadpool(self.config.add_source, entry, actor=request.state.who.actor)
        except (BadInput, ValueError) as exc:
            self.flash(request, str(exc), "error")
            return self.back("/sources")
        self.flash(request, f"Added {entry.name}. Press “Re-sync now” to index it (the scheduler also will).")
        return self.back("/sources")

    async def source_remove(self, request: Request) -> Response:
        """Stop keeping a source fresh (its index stays until ``coderag remove``)."""
        name = request.path_params["name"]
        try:
            await run_in_threadpool(self.config.remove_source, name, actor=request.state.who.actor)
            self.flash(request, f"{name} is no longer kept fresh; `coderag remove {name}` deletes its index.")
        except BadInput as exc:
            self.flash(request, str(exc), "error")
        return self.back("/sources")

    async def source_sync(self, request: Request) -> Response:
        """Re-sync a configured source now, in the background (one at a time per process)."""
        name = request.path_params["name"]
        entry = next((e for e in await run_in_threadpool(self.config.sources) if e.name == name), None)
        if entry is None:
            self.flash(request, f"{name} is not configured here: add it first.", "error")
            return self.back("/sources")
        actor = request.state.who.actor
        with self._lock:
            if name in self.syncing:
                self.flash(request, f"{name} is already being synced.", "error")
                return self.back("/sources")
            self.syncing[name] = datetime.now(timezone.utc)
        await run_in_threadpool(self.config.record, actor, "source.sync", name, {"kind": entry.kind})
        self._pool.submit(self._sync, name, entry.kind, actor)
        self.flash(request, f"Re-sync of {name} started; this page shows its result when it is done.")
        return self.back("/sources")

    def _sync(self, name: str, kind: str, actor: str) -> None:
        try:
            summary = (self.deps.sync or run_sync)(self.deps, name, kind)
            self.config.record(actor, "source.sync.done", name, {"result": summary})
        except Exception as exc:  # noqa: BLE001 - recorded as the source's last error by the use case too
            log.warning("admin: re-sync of %s failed: %s", name, redact_text(str(exc))[:300])
            self.config.record(actor, "source.sync.failed", name,
                               {"error": redact_text(f"{type(exc).__name__}: {exc}")[:500]})
        finally:
            with self._lock:
                self.syncing.pop(name, None)

    # ------------------------------------------------------------------ channels
    async def channels(self, request: Request) -> Response:
        """Every channel's allow-list and reply mode, and the form to change them
        (``?edit=CHANNEL``: the form holds that channel's current policy)."""
        channels = await run_in_threadpool(self.config.channels)
        names = {e.name for e in await run_in_threadpool(self.config.sources)}
        indexed, _error = await run_in_threadpool(self._indexed)
        names |= {s["name"] for s in indexed}
        edit = request.query_params.get("edit")
        current = next((c for c in channels if c.channel == edit), None) if edit else None
        return self.render(request, "channels.html", {"channels": channels, "known": sorted(names),
                                                      "form": policy_form(current, names)})

    async def channel_set(self, request: Request) -> Response:
        """Set one channel's allow-list (``list=own``: the ticked sources, maybe none;
        ``list=inherit``: none of its own) and reply mode."""
        f = request.state.form
        own = str(f.get("list") or "inherit") == "own"
        picked = [str(x) for x in f.getlist("sources")]
        picked += [x.strip() for x in str(f.get("other") or "").split(",") if x.strip()]
        try:
            entry = await run_in_threadpool(self.config.set_channel, str(f.get("channel") or ""),
                                            sources=picked if own else None,
                                            reply_mode=str(f.get("reply_mode") or "mention"),
                                            actor=request.state.who.actor)
        except BadInput as exc:
            self.flash(request, str(exc), "error")
            return self.back("/channels")
        what = ("every source it would otherwise read" if entry.sources is None
                else ", ".join(entry.sources) or "nothing")
        self.flash(request, f"{entry.channel}: reads {what}; replies: {entry.reply_mode}. The bot uses it from the "
                            f"next question.")
        return self.back("/channels")

    async def channel_remove(self, request: Request) -> Response:
        """Remove a channel's own policy (it follows ``*`` again)."""
        channel = request.path_params["channel"]
        try:
            await run_in_threadpool(self.config.remove_channel, channel, actor=request.state.who.actor)
            self.flash(request, f"{channel} follows the default (*) again.")
        except BadInput as exc:
            self.flash(request, str(exc), "error")
        return self.back("/channels")

    # ------------------------------------------------------------------ questions and gaps
    def _links(self) -> dict[str, str]:
        templates = dict(self.deps.app.chat.repo_urls)
        for e in self.config.sources():
            if e.url_template and e.name not in templates:
                templates[e.name] = e.url_template
        return templates

    def _views(self, rows) -> list[dict]:
        from ..chat.links import source_url

        templates = self._links()
        drafts = self.drafts.by_refs([q.ref for q in rows])
        out = []
        for q in rows:
            out.append({"q": q, "draft": drafts.get(q.ref), "citations": [
                {"label": c.label, "url": source_url(templates, c.repo, c.commit, c.path, c.start_line, c.end_line)}
                for c in q.citations]})
        return out

    async def questions(self, request: Request) -> Response:
        """The query log, newest first, filtered by surface, channel and outcome."""
        from ..querylog.browse import OUTCOMES, channels_seen, list_queries
        from ..querylog.models import SOURCES

        p = request.query_params
        surface = p.get("surface") if p.get("surface") in SOURCES else None
        outcome = p.get("outcome") if p.get("outcome") in OUTCOMES else None
        channel = (p.get("channel") or "").strip()[:40] or None
        rows = await run_in_threadpool(list_queries, self.deps.sessions, surface=surface, channel=channel,
                                       outcome=outcome, limit=100)
        views = await run_in_threadpool(self._views, rows)
        chans = await run_in_threadpool(channels_seen, self.deps.sessions)
        return self.render(request, "questions.html", {
            "rows": views, "surfaces": SOURCES, "outcomes": OUTCOMES, "channels": chans,
            "f": {"surface": surface or "", "channel": channel or "", "outcome": outcome or ""}})

    async def gaps(self, request: Request) -> Response:
        """Questions it could not answer, or answered with a 👎, with the reasons given."""
        from ..querylog.browse import coverage_gaps

        rows = await run_in_threadpool(coverage_gaps, self.deps.sessions)
        return self.render(request, "gaps.html", {"rows": await run_in_threadpool(self._views, rows)})

    async def gaps_export(self, request: Request) -> Response:
        """The ticked questions as golden cases (JSONL, the ``coderag eval`` format), downloaded."""
        from ..querylog.browse import golden_cases

        ids = []
        for x in request.state.form.getlist("ids"):
            try:
                ids.append(int(x))
            except ValueError:
                continue
        if not ids:
            self.flash(request, "Tick at least one question to export.", "error")
            return self.back("/gaps")
        items = await run_in_threadpool(golden_cases, self.deps.sessions, ids)
        await run_in_threadpool(self.config.record, request.state.who.actor, "golden.export",
                                f"{len(items)} case(s)", {"ids": [i["id"] for i in items]})
        body = "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        return Response(body, media_type="application/x-ndjson", headers={
            "Content-Disposition": f'attachment; filename="golden-{stamp}.jsonl"'})

    # ------------------------------------------------------------------ drift and health
    async def drift(self, request: Request) -> Response:
        """Doc steps naming code the repositories no longer have, per source, doc and section."""
        from indexer.read import drift_report

        try:
            report = await run_in_threadpool(drift_report, self.deps.sessions)
            error = ""
        except BadInput as exc:
            report, error = None, str(exc)
        return self.render(request, "drift.html", {"report": report, "error": error})

    def _health_extra(self) -> dict[str, dict]:
        import indexer

        out: dict[str, dict] = {}
        base = self.deps.app.freshness
        try:
            if base.index_queue == "procrastinate":
                q = indexer.queue_status(base, self.deps.app.core) or {}
                out["queue"] = {"ok": not q.get("failed"), "text": f"{q.get('todo', 0)} waiting, {q.get('doing', 0)} "
                                f"running, {q.get('failed', 0)} failed (PostgreSQL index queue)"}
            elif self.deps.freshness is not None:
                q = self.deps.freshness.workers.counts()
                out["queue"] = {"ok": not q.get("failed"), "text": f"{q.get('todo', 0)} waiting, {q.get('doing', 0)} "
                                f"running in this process (threads)"}
            else:
                out["queue"] = {"ok": True, "text": "index jobs run as threads in the indexer process (not this one)"}
        except Exception as exc:  # noqa: BLE001
            out["queue"] = {"ok": False, "text": redact_text(f"unreadable: {type(exc).__name__}: {exc}")[:300]}
        try:
            st = indexer.scheduler_state(self.deps.sessions)
            if st is None:
                out["scheduler"] = {"ok": False, "text": "no scheduler has run on this database"}
            else:
                out["scheduler"] = {"ok": st["alive"], "text": f"{'running' if st['alive'] else 'silent'}: "
                                    f"{st['owner']}, last heartbeat {int(st['age_s'])} s ago"}
        except Exception as exc:  # noqa: BLE001
            out["scheduler"] = {"ok": False, "text": f"unreadable: {type(exc).__name__}"}
        return out

    async def health(self, request: Request) -> Response:
        """Weaviate, the database, the index queue and the scheduler, checked now."""
        from ..health import database_check, run_checks, weaviate_check

        checks = {"database": database_check(self.deps.sessions)}
        if self.deps.store is not None:
            checks["weaviate"] = weaviate_check(self.deps.store)
        results = await run_checks(checks)
        rows = [{"name": n, "ok": r == "ok", "text": redact_text(r)} for n, r in sorted(results.items())]
        if self.deps.store is None:
            rows.append({"name": "weaviate", "ok": False, "text": "not opened by this process"})
        for name, v in (await run_in_threadpool(self._health_extra)).items():
            rows.append({"name": name, **v})
        return self.render(request, "health.html", {"rows": rows})

    # ------------------------------------------------------------------ reviews
    def _post(self, channel: str, thread_ts: str, messages: list) -> str | None:
        client = self.deps.slack_client
        first = None
        for text, blocks in messages:
            kwargs = {"blocks": blocks} if blocks else {}
            resp = client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text or "",
                                           unfurl_links=False, unfurl_media=False, **kwargs)
            first = first or resp.get("ts")
        return first

    def _postable(self) -> set[str]:
        """The chats whose drafts this process can post (the others can only be declined here)."""
        return {name for name, on in (("slack", self.deps.slack_client is not None),
                                      ("teams", self.deps.teams is not None)) if on}

    def _poster(self, draft, loop: asyncio.AbstractEventLoop):
        """How ``draft`` reaches the asker's thread (``post(channel, thread_ts, messages)``
        of :meth:`DraftStore.decide`), ``None`` when its chat is not served here. A Teams
        draft is posted by the Teams agent on this event loop ``loop``."""
        if draft is None or draft.surface not in self._postable():
            return None
        if draft.surface == "slack":
            return self._post
        teams, target = self.deps.teams, draft.target or {}

        def post_teams(_channel: str, _thread: str, messages: list) -> str | None:
            return asyncio.run_coroutine_threadsafe(teams.post_draft(target, messages), loop).result(timeout=120)

        return post_teams

    async def reviews(self, request: Request) -> Response:
        """Drafts waiting for a reviewer, and the decisions taken."""
        pending = await run_in_threadpool(self.drafts.list, "pending")
        decided = [d for d in await run_in_threadpool(self.drafts.list, None, 50) if d.status != "pending"]
        channel = await run_in_threadpool(self.config.value, REVIEW_CHANNEL)
        return self.render(request, "reviews.html", {"pending": pending, "decided": decided,
                                                     "review_channel": channel, "postable": self._postable()})

    async def review_decide(self, request: Request) -> Response:
        """Approve, edit or decline one draft (posted through its own chat: Slack or Teams)."""
        f = request.state.form
        draft_id = request.path_params["draft_id"]
        decision = str(f.get("decision") or "")
        draft = await run_in_threadpool(self.drafts.get, draft_id)
        post = self._poster(draft, asyncio.get_running_loop())
        if draft is not None and post is None and decision != "decline":
            self.flash(request, f"{draft.surface.capitalize()} is not served by this process: draft {draft.id} can "
                                f"only be declined here.", "error")
            return self.back("/reviews")
        try:
            d = await run_in_threadpool(self.drafts.decide, draft_id, decision, reviewer=request.state.who.actor,
                                        post=post, text=str(f.get("text") or "") or None)
        except BadInput as exc:
            self.flash(request, str(exc), "error")
            return self.back("/reviews")
        except Exception as exc:  # noqa: BLE001 - the chat refused: the draft stays pending
            log.warning("admin: posting draft %s failed: %s", draft_id, redact_text(str(exc))[:300])
            chat = draft.surface.capitalize() if draft is not None else "The chat"
            self.flash(request, f"{chat} refused the post ({type(exc).__name__}); the draft is still pending.",
                       "error")
            return self.back("/reviews")
        self.flash(request, f"Draft {d.id} {d.status}" + (" and posted in the asker's thread." if d.posted_ts else "."))
        return self.back("/reviews")

    async def review_channel(self, request: Request) -> Response:
        """Set the channel where new drafts are announced (empty: the page only)."""
        value = str(request.state.form.get("channel") or "").strip()
        try:
            if value:
                from ..runconfig.store import check_channel

                value = check_channel(value)
            await run_in_threadpool(self.config.set_value, REVIEW_CHANNEL, value, actor=request.state.who.actor)
            self.flash(request, f"Drafts are announced in {value}." if value else "Drafts are on this page only.")
        except BadInput as exc:
            self.flash(request, str(exc), "error")
        return self.back("/reviews")

    # ------------------------------------------------------------------ change log
    async def changes(self, request: Request) -> Response:
        """Every change to the configuration and every decision: who, when, what."""
        rows = await run_in_threadpool(self.config.changes, 300)
        return self.render(request, "changes.html", {"rows": rows})


class _SecurityHeaders:
    """No framing, no sniffing, no caching, no script, no referrer across sites."""

    HEADERS = [(b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                                            b"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
               (b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
               (b"referrer-policy", b"same-origin"), (b"cache-control", b"no-store")]

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(message):
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + self.HEADERS
            await send(message)

        await self.app(scope, receive, with_headers)

