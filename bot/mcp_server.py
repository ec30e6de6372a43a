"""The index over the Model Context Protocol: the bot's tools for coding agents.

One :class:`~mcp.server.mcpserver.MCPServer` (the official ``mcp`` SDK) with the tools
``search``, ``ask``, ``impact``, ``who``, ``drift``, ``status`` and ``read``, and the
resource ``coderag://sources`` (the indexed sources). Two transports:

* stdio (``coderag mcp``): one developer, the local user's full access;
* streamable HTTP at ``/mcp`` inside ``coderag serve`` (bot role): every request needs
  ``Authorization: Bearer <token>``; each token of ``CODERAG_MCP_TOKENS`` maps to the
  sources it may read (:class:`McpAccess`). An unknown token gets 401 before any work;
  a source outside the token's scope does not exist for it, in every tool.

Every tool returns a structured result (``structuredContent``) and a short text
rendering; bad input (too long, out of range, a path outside the repository, an unknown
repo or symbol) is a tool error of one line, never a traceback.
"""
import getpass
import hmac
import json
import logging
import subprocess
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Collection

from common.errors import BadInput, CoderagError
from common.settings import AppSettings, ChatSettings, Settings

if TYPE_CHECKING:  # pragma: no cover
    from mcp.server.mcpserver import MCPServer

log = logging.getLogger(__name__)

ENV_VAR = "CODERAG_MCP_TOKENS"
#: ASGI scope key where the HTTP transport's auth middleware leaves the caller's principal.
SCOPE_KEY = "coderag.mcp_principal"
MAX_QUERY_CHARS = 2000
MAX_TOP_K = 50
MAX_DEPTH = 5
MAX_READ_LINES = 400
MAX_ARG_CHARS = 300
SNIPPET_LINES = 12
DYNAMIC_NOTE = ("A static call graph can miss callers that reach the symbol dynamically "
                "(getattr, reflection, callbacks registered by name, eval).")


@dataclass(frozen=True)
class Principal:
    """Who calls: ``name`` (recorded in the query log) and ``allowed`` sources
    (``None`` = every source)."""

    name: str
    allowed: frozenset[str] | None


LOCAL = Principal(name="", allowed=None)
#: The caller of the request being handled (set by the server middleware of :func:`build_server`).
_CALLER: ContextVar[Principal] = ContextVar("coderag_mcp_caller", default=Principal(name="?", allowed=frozenset()))


@dataclass(frozen=True)
class McpAccess:
    """The bearer tokens of the HTTP transport, parsed from ``CODERAG_MCP_TOKENS``.

    The value is a JSON object ``{"NAME": {"token": "SECRET", "sources": ["repo-a", ...]}}``;
    ``sources`` is the same kind of list as a channel's in ``CODERAG_CHANNEL_SOURCES``
    (``["*"]`` = every source, ``[]`` = nothing). Unset: the HTTP transport refuses every
    request (401); stdio is unaffected.
    """

    tokens: tuple[tuple[str, str, frozenset[str] | None], ...] = ()

    @classmethod
    def parse(cls, raw: str | None) -> "McpAccess":
        """Parse the JSON text. Raises ``BadInput`` (one line, never the token values)."""
        if raw is None or not raw.strip():
            return cls(())
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{ENV_VAR} is not valid JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise BadInput(f'{ENV_VAR} must be a JSON object {{"NAME": {{"token": "...", "sources": [...]}}}}')
        out = []
        seen: set[str] = set()
        for name, entry in data.items():
            if not isinstance(entry, dict) or not isinstance(entry.get("token"), str) or len(entry["token"]) < 16:
                raise BadInput(f"{ENV_VAR}[{name!r}] needs a \"token\" string of at least 16 characters")
            sources = entry.get("sources")
            if not isinstance(sources, list) or not all(isinstance(s, str) and s for s in sources):
                raise BadInput(f"{ENV_VAR}[{name!r}][\"sources\"] must be a list of source names (or [\"*\"])")
            if entry["token"] in seen:
                raise BadInput(f"{ENV_VAR}: two entries share one token")
            seen.add(entry["token"])
            out.append((str(name), entry["token"], None if "*" in sources else frozenset(sources)))
        return cls(tuple(out))

    @classmethod
    def from_settings(cls, chat: ChatSettings) -> "McpAccess":
        """The tokens in ``CODERAG_MCP_TOKENS`` of the chat group read at start-up."""
        return cls.parse(chat.mcp_tokens or None)

    def principal(self, authorization: str | None) -> Principal | None:
        """The principal of an ``Authorization`` header value, or ``None`` (unknown,
        missing or not a bearer token). Compared in constant time."""
        if not authorization or not authorization.lower().startswith("bearer "):
            return None
        given = authorization[7:].strip().encode()
        found = None
        for name, token, allowed in self.tokens:
            if hmac.compare_digest(given, token.encode()):
                found = Principal(name=name, allowed=allowed)
        return found


class McpAuth:
    """ASGI middleware for the HTTP transport: 401 (JSON, ``WWW-Authenticate: Bearer``)
    for a request without a known bearer token, before the MCP app sees it; otherwise
    the principal goes into the ASGI scope under :data:`SCOPE_KEY`."""

    def __init__(self, app, access: McpAccess):
        self.app = app
        self.access = access

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        who = self.access.principal(header)
        if who is None:
            body = b'{"error": "unauthorized: a valid bearer token is required"}'
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"www-authenticate", b'Bearer realm="coderag"'),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        scope[SCOPE_KEY] = who
        await self.app(scope, receive, send)


class Backend:
    """What the tools read: the settings read at start-up, the SQL sessions, the index and
    the answer service, opened on first use (so ``tools/list`` needs no Weaviate).
    ``serve`` passes its own sessions and service."""

    def __init__(self, app: AppSettings, *, sessions=None, service=None):
        self.app = app
        self._sessions = sessions
        self._service = service
        self._store = None

    @property
    def settings(self) -> Settings:
        """The storage group (:class:`common.settings.Settings`)."""
        return self.app.core

    @property
    def sessions(self):
        if self._sessions is None:
            from common.db import open_database

            self._sessions = open_database(self.settings)
        return self._sessions

    @property
    def service(self):
        if self._service is None:
            from indexer import ChunkStore, make_embedder

            from .answer.service import AnswerService

            self._store = ChunkStore.open(self.settings)
            self._service = AnswerService(self._store, make_embedder(self.settings), top_k=5,
                                          sessions=self.sessions, settings=self.app)
        return self._service

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


# --------------------------------------------------------------------------- checks


def _text(value: Any, what: str, limit: int = MAX_QUERY_CHARS) -> str:
    """A non-empty string of at most ``limit`` characters, else ``BadInput``."""
    if not isinstance(value, str) or not value.strip():
        raise BadInput(f"{what} is empty")
    if len(value) > limit:
        raise BadInput(f"{what} is {len(value)} characters; the most is {limit}")
    return value.strip()


def _in_range(value: int, what: str, low: int, high: int) -> int:
    if not low <= value <= high:
        raise BadInput(f"{what} must be between {low} and {high}, got {value}")
    return value


def _shown(value: str) -> str:
    """An argument echoed back in an error: one line, at most 80 characters."""
    flat = " ".join(str(value).split())
    return flat if len(flat) <= 80 else flat[:77] + "..."


def _age(indexed_at) -> dict:
    """``{"indexed_at": ISO or None, "age_seconds": int or None}``."""
    if not indexed_at:
        return {"indexed_at": None, "age_seconds": None}
    when = indexed_at if indexed_at.tzinfo else indexed_at.replace(tzinfo=timezone.utc)
    return {"indexed_at": when.isoformat(), "age_seconds": int((datetime.now(timezone.utc) - when).total_seconds())}


def _readable(records: list, allowed) -> list:
    """``records`` a caller with the allow-list ``allowed`` may see (``None``: all; a named
    ref where its repository is), as :meth:`AnswerService.records` filters them."""
    return [s for s in records if allowed is None or s.name in allowed or (s.base and s.base in allowed)]


class Tools:
    """The tool bodies (synchronous; the server runs them in a worker thread), each
    taking the caller's :class:`Principal` and returning ``(structured dict, short text)``.

    Scope rule: a source outside ``principal.allowed`` is treated exactly like a source
    that is not indexed (same errors, same empty lists)."""

    def __init__(self, backend: Backend):
        self.backend = backend

    # ---- scope

    def _records(self, who: Principal) -> list:
        """The source records ``who`` may see (one read of the index)."""
        return self.backend.service.records(who.allowed)

    @staticmethod
    def _repo(records: list, repo: str | None) -> str | None:
        """``repo`` when it is among ``records`` (indexed and in scope); ``BadInput``
        otherwise (one message for both, so a forbidden source is indistinguishable from a
        missing one). ``None`` when no repo was asked for."""
        if repo is None or repo == "":
            return None
        repo = _text(repo, "repo", 200)
        if repo not in {r.name for r in records}:
            raise BadInput(f"no indexed repo or space named {_shown(repo)!r}")
        return repo

    # ---- tools

    def search(self, who: Principal, query: str, repo: str | None, top_k: int,
               ref: str | None = None) -> tuple[dict, str]:
        query = _text(query, "query")
        top_k = _in_range(top_k, "top_k", 1, MAX_TOP_K)
        every = self.backend.service.records()  # one read: the scope, the ref, the search
        records = _readable(every, who.allowed)
        repo = self._repo(records, repo)
        repos, allowed = [repo] if repo else None, who.allowed
        if ref:  # a named ref: every repository's (or repo's) ref source, readable where its repository is
            from .refs import allow_refs, resolve_ref

            views = resolve_ref(every, _text(ref, "ref", 200), repos=repos, allowed=allowed,
                                sessions=self.backend.sessions)
            repos, allowed = [v.name for v in views], allow_refs(allowed, views)
            records = _readable(every, allowed)
        result = self.backend.service.retriever.search(query, top_k=top_k, repos=repos, allowed=allowed,
                                                       records=every)
        ages = {r.name: _age(r.indexed_at) for r in records}
        results = []
        for h in result.hits:
            d = h.to_result()
            d["snippet"] = "\n".join(h.chunk.content.splitlines()[:SNIPPET_LINES])
            d["index_age"] = ages.get(h.chunk.repo, _age(None))
            results.append(d)
        text = "\n".join(f"{i}. {d['repo']}/{d['path']}:{d['start_line']}-{d['end_line']}@{d['commit'][:7]} "
                         f"{d['symbol'] or d['kind']} ({d['score']:.3f})" for i, d in enumerate(results, 1))
        return {"results": results}, text or "No results."

    def ask(self, who: Principal, question: str, repo: str | None, ref: str | None = None) -> tuple[dict, str]:
        from .answer.question import QuestionTooLong, check_question

        question = _text(question, "question")
        try:
            question = check_question(question)
        except QuestionTooLong as exc:
            raise BadInput(str(exc)) from None
        repo = self._repo(self._records(who), repo)
        answer = self.backend.service.ask(question, repos=[repo] if repo else None, allowed=who.allowed,
                                          ref=_text(ref, "ref", 200) if ref else None)
        self._log(answer, who)
        return answer.to_json(), answer.text

    def _log(self, answer, who: Principal) -> None:
        """Record the answer like a chat question (surface ``mcp``; the token's name, or
        the local user over stdio); a logging failure never hides the answer."""
        from .querylog.recorder import QueryLog

        try:
            QueryLog(self.backend.sessions, settings=self.backend.app.querylog).record_answer(answer, source="mcp", user=who.name or getpass.getuser())
        except Exception as exc:  # noqa: BLE001 - the answer is out; say so in the log
            log.warning("mcp: the query was not logged (%s)", str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)

    def impact(self, who: Principal, symbol: str, repo: str | None, depth: int,
               ref: str | None = None) -> tuple[dict, str]:
        from .impact import AmbiguousSymbol, format_report

        symbol = _text(symbol, "symbol", MAX_ARG_CHARS)
        depth = _in_range(depth, "depth", 1, MAX_DEPTH)
        repo = self._repo(self._records(who), repo)
        try:
            report = self.backend.service.impact(symbol, repo=repo, depth=depth, allowed=who.allowed,
                                                 ref=_text(ref, "ref", 200) if ref else None)
        except AmbiguousSymbol as exc:
            cands = [{"repo": r, "path": d.path, "start_line": d.start_line, "symbol": d.symbol, "kind": d.kind}
                     for r, d in exc.candidates if who.allowed is None or r in who.allowed
                     or r.split("@", 1)[0] in who.allowed]
            text = f"{_shown(symbol)!r} is ambiguous; call impact again with one of:\n" + "\n".join(
                f"  {c['path']}:{c['start_line']}  {c['symbol']} ({c['kind']}, repo {c['repo']})" for c in cands)
            return {"ambiguous": True, "candidates": cands, "note": DYNAMIC_NOTE}, text
        report = dict(report)
        report["note"] = DYNAMIC_NOTE
        return report, format_report(report) + DYNAMIC_NOTE

    def who(self, who: Principal, path_or_symbol: str, ref: str | None = None) -> tuple[dict, str]:
        from .knowledge import at_ref, run_who
        from .knowledge_text import format_who

        query = _text(path_or_symbol, "path_or_symbol", MAX_ARG_CHARS)
        backend = self.backend
        repo, allowed = at_ref(backend.sessions, _text(ref, "ref", 200) if ref else None, None, who.allowed)
        res = run_who(query, sessions=backend.sessions, settings=backend.settings, repo=repo,
                      retriever_factory=lambda: backend.service.retriever, allowed=allowed)
        if res is None:
            raise BadInput(f"nothing indexed matches {_shown(query)!r}")
        return res.to_dict(), format_who(res)

    def drift(self, who: Principal, source: str | None) -> tuple[dict, str]:
        from indexer.read import drift_report

        from .knowledge_text import format_drift

        source = self._repo(self._records(who), source)
        report = drift_report(self.backend.sessions, source, allowed=who.allowed)
        if who.allowed is not None:  # a reference resolved in another source stays invisible
            report = _drop_foreign(report, who.allowed)
        return report, format_drift(report, limit=20)

    def status(self, who: Principal) -> tuple[dict, str]:
        rows = []
        for r in self._records(who):
            rows.append({"name": r.name, "kind": r.kind, "commit": r.commit, "chunks": r.chunks,
                         "files": r.files, "model": r.model, **_age(r.indexed_at)})
        text = "\n".join(f"{r['name']} ({r['kind']}) @{(r['commit'] or '')[:7]}: {r['chunks']} chunks, "
                         f"indexed {r['indexed_at'] or 'never'}" for r in rows)
        return {"sources": rows}, text or "Nothing is indexed."

    def read(self, who: Principal, repo: str, path: str, start_line: int, end_line: int) -> tuple[dict, str]:
        records = self._records(who)
        repo = self._repo(records, _text(repo, "repo", 200))
        path = _text(path, "path", 1000)
        parts = path.replace("\\", "/").split("/")
        if path.startswith("/") or ".." in parts or any(p in ("", ".") for p in parts) or ":" in path:
            raise BadInput(f"path must be a path inside the repository, got {_shown(path)!r}")
        _in_range(start_line, "start_line", 1, 10_000_000)
        _in_range(end_line, "end_line", start_line, start_line + MAX_READ_LINES - 1)
        record = next(r for r in records if r.name == repo)
        text = _file_at_commit(record, path)
        lines = text.splitlines()
        if start_line > len(lines):
            raise BadInput(f"{_shown(path)} has {len(lines)} lines at {record.commit[:7]}; start_line {start_line} is past the end")
        body = "\n".join(lines[start_line - 1:end_line])
        end = min(end_line, len(lines))
        cite = f"{repo}/{path}:{start_line}-{end}@{record.commit[:7]}"
        return {"repo": repo, "path": path, "start_line": start_line, "end_line": end,
                "commit": record.commit, "text": body}, f"{cite}\n{body}"

    def sources(self, who: Principal) -> list[dict]:
        return self.status(who)[0]["sources"]


def _drop_foreign(report: dict, allowed: Collection[str]) -> dict:
    """``report`` without references that point into a source outside ``allowed``."""
    def ok(ref: dict) -> bool:
        return not ref.get("repo") or ref["repo"] in allowed

    out = dict(report)
    out["stale"] = [r for r in report.get("stale", []) if ok(r)]
    out["sources"] = [dict(s, docs=[dict(d, sections=[dict(sec, stale=[r for r in sec.get("stale", []) if ok(r)])
                                                       for sec in d.get("sections", [])])
                                    for d in s.get("docs", [])])
                      for s in report.get("sources", []) if s.get("source") in allowed]
    return out


def _file_at_commit(record, path: str) -> str:
    """The file ``path`` at the record's indexed commit, by ``git show`` in the source's
    recorded checkout (chunks are no substitute: they carry class-context headers, not
    the file's lines). Raises ``BadInput`` when the checkout does not have it."""
    if record.kind in ("git", "git-ref") and record.root and record.commit:
        proc = subprocess.run(["git", "-C", record.root, "show", f"{record.commit}:{path}"],
                              capture_output=True, timeout=30)
        if proc.returncode == 0:
            return proc.stdout.decode("utf-8", errors="replace")
    raise BadInput(f"no file {_shown(path)} in {record.name} at its indexed commit")


# --------------------------------------------------------------------------- the server


def build_server(backend: Backend, principal_of: Callable[[Any], Principal] | None = None) -> "MCPServer":
    """The MCP server with every tool and the sources resource.

    ``principal_of(ctx)`` gives the caller of a request (the HTTP transport reads the
    principal its middleware put in the request scope); ``None``: the local user, full
    access (stdio).
    """
    import anyio
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import CallToolResult, TextContent

    whom = principal_of or (lambda _ctx: LOCAL)

    async def identify(ctx, call_next):
        """Server middleware: the caller of this request, for the handlers it runs."""
        token = _CALLER.set(whom(ctx))
        try:
            return await call_next(ctx)
        finally:
            _CALLER.reset(token)

    server = MCPServer(name="coderag", version=_version(), middleware=[identify],
                       instructions="Search and question the code and runbooks coderag has indexed. Every result "
                                    "cites repo/path:line@sha at the indexed commit; `read` opens exactly that text.")
    tools = Tools(backend)

    async def run(body: Callable[[Principal], tuple[dict, str]]) -> CallToolResult:
        who = _CALLER.get()
        try:
            structured, text = await anyio.to_thread.run_sync(lambda: body(who))
        except CoderagError as exc:
            raise ToolError(_one_line(str(exc))) from None
        return CallToolResult(content=[TextContent(type="text", text=text)],
                              structured_content=json.loads(json.dumps(structured, default=str)))

    @server.tool(description="Hybrid search over the indexed code and docs: ranked chunks with repo, path, "
                             "start_line, end_line, commit, symbol, kind, score, a snippet and the index age. "
                             "`ref`: an indexed named ref (a release tag or branch) to read instead of the "
                             "default branch.")
    async def search(query: str, repo: str | None = None, top_k: int = 10, ref: str | None = None) -> CallToolResult:
        return await run(lambda who: tools.search(who, query, repo, top_k, ref))

    @server.tool(description="Answer a question from the index, with citations (the same object as "
                             "`coderag ask --json`: answer, citations, no_coverage, uncovered_terms, stale). "
                             "`ref`: an indexed named ref (a release tag or branch) to read instead of the "
                             "default branch (a version the question names is read too).")
    async def ask(question: str, repo: str | None = None, ref: str | None = None) -> CallToolResult:
        return await run(lambda who: tools.ask(who, question, repo, ref))

    @server.tool(description="Who calls SYMBOL (Class.method, module.func, a bare name or path:line), directly "
                             "and transitively, with path:line@sha; the candidates when the name is ambiguous. "
                             "`ref`: an indexed named ref (a release tag or branch): its call graph.")
    async def impact(symbol: str, repo: str | None = None, depth: int = 3, ref: str | None = None) -> CallToolResult:
        return await run(lambda who: tools.impact(who, symbol, repo, depth, ref))

    @server.tool(description="Owners (CODEOWNERS) and the people who know a path, folder or symbol best."
                             " `ref`: an indexed named ref (a release tag or branch): its history up to the ref.")
    async def who(path_or_symbol: str, ref: str | None = None) -> CallToolResult:
        return await run(lambda caller: tools.who(caller, path_or_symbol, ref))

    @server.tool(description="Doc references (runbooks, READMEs, Confluence) to code names the code no longer has.")
    async def drift(source: str | None = None) -> CallToolResult:
        return await run(lambda who: tools.drift(who, source))

    @server.tool(description="The indexed sources: commit, chunks, files, model and index age.")
    async def status() -> CallToolResult:
        return await run(lambda who: tools.status(who))

    @server.tool(description=f"The text of repo/path lines start_line..end_line (at most {MAX_READ_LINES}) at the "
                             "INDEXED commit, so a citation path:line@sha can be opened exactly.")
    async def read(repo: str, path: str, start_line: int, end_line: int) -> CallToolResult:
        return await run(lambda who: tools.read(who, repo, path, start_line, end_line))

    @server.resource("coderag://sources", name="sources", mime_type="application/json",
                     description="The indexed sources this caller may read (name, kind, commit, chunks, age).")
    async def sources() -> str:
        who = _CALLER.get()
        rows = await anyio.to_thread.run_sync(lambda: tools.sources(who))
        return json.dumps(rows, default=str)

    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("coderag")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:500] if lines else "error"


def http_principal(ctx) -> Principal:
    """The principal the HTTP middleware put in the request's ASGI scope (``ctx``: the
    SDK's request context); a request that somehow has none gets an empty scope (never
    full access)."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None) or {}
    return scope.get(SCOPE_KEY) or Principal(name="?", allowed=frozenset())


def run_stdio(backend: Backend) -> None:
    """``coderag mcp``: serve over stdin/stdout until the client closes it."""
    try:
        build_server(backend).run("stdio")
    finally:
        backend.close()
