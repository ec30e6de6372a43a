"""Runbook drift and "who knows this" in the bot: ``drift`` and ``who`` for the CLI and chat, answer notes, the digest.

Everything here reads the indexer's public API (``indexer.read.drift_report``, ``indexer.read.who``
...). The CLI (``bot/cli.py``), the chat front ends (``bot/slack/app.py``,
``bot/teams/app.py``) and the answer service call in through small marked hooks:

* :func:`drift_command` / :func:`who_command`: ``coderag drift`` / ``coderag who``;
* :func:`chat_reply`: the text of ``/coderag drift [space]`` and ``/coderag who …``;
* :func:`answer_notes`: notes for an answer: a cited runbook section with stale
  references says so next to its citation number, the sources' CODEOWNERS owners, and
  for a no-coverage or low-confidence answer who to ask, from the closest code;
* :func:`digest_job_provider`: the weekly drift digest job for the freshness scheduler.
"""
from __future__ import annotations

import json
import logging
import re
from contextlib import contextmanager
from typing import Callable, Collection, Iterator, Sequence

from common.errors import CoderagError
from common.settings import defaults
from common.db import open_database
from common.errors import BadInput, EmptyIndex
from common.settings import Settings
from indexer.read import (closest_paths, closest_symbols, drift_report, experts_for_locations, looks_like_path,
                          owners_line, stale_in_section, who)

from .knowledge_text import ask_line, format_drift, format_who, stale_note

log = logging.getLogger(__name__)

DOC_SUFFIXES = (".md", ".markdown", ".mdx", ".rst")
LOW_CONFIDENCE_COSINE = 0.35  # just above the no-coverage threshold (bot.retrieval.retriever: 0.30)


def _is_doc(path: str, language: str = "") -> bool:
    return path.lower().endswith(DOC_SUFFIXES) or language in ("markdown", "rst") or path.startswith("confluence/")


# --------------------------------------------------------------------------- who


def who_for_question(retriever, sessions, settings: Settings, question: str, *, repos=None,
                     allowed: Collection[str] | None = None, hits=None):
    """Experts of the code closest to ``question`` (its top code hits; doc hits skipped)."""
    if hits is None:
        hits = retriever.search(question, top_k=8, repos=repos, allowed=allowed).hits
    locs = [(h.chunk.repo, h.chunk.path, h.chunk.start_line, h.chunk.end_line, h.chunk.symbol or h.chunk.path)
            for h in hits if not _is_doc(h.chunk.path, getattr(h.chunk, "language", ""))]
    if not locs:
        return None
    return experts_for_locations(sessions, settings, question, locs)


def run_who(query: str, *, sessions, settings: Settings, retriever_factory=None, repo: str | None = None,
            allowed: Collection[str] | None = None):
    """``who PATH|SYMBOL|QUESTION``: a path or a symbol is looked up directly; anything
    of more than one word is a question (``retriever_factory()`` gives the retriever).
    ``None`` when nothing is found. A one-word query that reads as a path (a ``/`` or a
    file extension) but is no indexed file, folder or symbol raises ``BadInput`` naming
    the closest indexed paths; any other one-word query that is no symbol raises
    ``UnknownSymbol`` naming the closest symbols, instead of answering some other code's
    experts."""
    if not query or not query.strip():
        raise BadInput("who needs a path, a symbol or a question")
    if repo is None and allowed is not None:
        # look in the sources the asker may read, each in turn: a forbidden source that
        # sorts first must not hide an allowed file of the same path
        res = next((r for r in (who(sessions, settings, query, repo=name) for name in sorted(allowed)) if r), None)
    else:
        res = who(sessions, settings, query, repo=repo)
    if res is not None and allowed is not None and res.repo not in allowed:
        res = None
    if res is None and looks_like_path(query):
        raise BadInput(_no_such_path(sessions, query, repo, allowed))
    if res is None and (looks_like_symbol(query) or len(query.split()) == 1):
        # one token is a name the user expects to exist, never a question to guess from
        from .impact import UnknownSymbol

        names, near = closest_symbols(sessions, query, repo=repo, allowed=allowed)
        where = f" in {', '.join(names)}" if names else ""
        hint = ("; closest: " + ", ".join(f"{sym} ({r})" if len({r for r, _ in near}) > 1 else sym for r, sym in near)
                if near else "; give an indexed path, a symbol or a question")
        if not looks_like_symbol(query):
            hint += f'; to ask who knows a topic, write a question: who "who knows {query.strip()}?"'
        raise UnknownSymbol(f"no indexed symbol {query.strip()}{where}{hint}")
    if res is None and retriever_factory is not None:
        res = who_for_question(retriever_factory(), sessions, settings, query,
                               repos=[repo] if repo else None, allowed=allowed)
    return res


#: One token written as code: ``snake_case``, ``CamelCase``, ``Class.method``, ``Foo::bar``,
#: ``run()``. A plain word ("authentication") stays a question.
_SYMBOL_LIKE = re.compile(r"^`?(?:[A-Za-z_]\w*(?:(?:\.|::|#)[A-Za-z_]\w*)+|\w*_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*|"
                          r"[A-Za-z_]\w*\(\))`?$")


def looks_like_symbol(query: str) -> bool:
    """One token written as code (see :data:`_SYMBOL_LIKE`): ``who`` looks it up as a
    symbol and says so when there is none, instead of searching for it as a question."""
    return bool(_SYMBOL_LIKE.match(query.strip()))


def _no_such_path(sessions, query: str, repo: str | None, allowed: Collection[str] | None) -> str:
    """One line: the path is not indexed, where it was looked for, the closest paths."""
    names, near = closest_paths(sessions, query, repo=repo, allowed=allowed)
    path = query.strip().strip("`")
    where = f" in {', '.join(names)}" if names else " (no repo is indexed for `who` yet)"
    if not near:
        return f"no indexed file or folder {path}{where}; give an indexed path, a symbol or a question"
    several = len({r for r, _p in near}) > 1
    return (f"no indexed file or folder {path}{where}; closest: "
            + ", ".join(f"{p} ({r})" if several else p for r, p in near))


def _known_repos(sessions) -> list[str]:
    """Repositories with a call graph or known to drift and ``who`` (docs-only ones too),
    without their named refs."""
    from .refs import sql_bases

    return sql_bases(sessions)


def _unknown_repo(sessions, name: str, what: str = "repo") -> EmptyIndex:
    """The error every command gives for a repository name nothing was indexed under
    (exit 4, :class:`EmptyIndex`), listing the indexed repositories."""
    return EmptyIndex(f"no indexed {what} named {name} (indexed: {', '.join(_known_repos(sessions)) or 'none'})")


@contextmanager
def lazy_retriever(settings: Settings, sessions) -> Iterator[Callable[[], object]]:
    """A factory that opens the chunk store and a :class:`~bot.retrieval.retriever.Retriever`
    only when a command needs a search (a symbol or path needs none), for the length of
    the ``with`` block; the store is closed on leaving it, error or not."""
    opened = []

    def retriever():
        from indexer import ChunkStore, make_embedder

        from .retrieval.retriever import Retriever

        opened.append(ChunkStore.open(settings))
        return Retriever(opened[-1], make_embedder(settings), sessions=sessions)

    try:
        yield retriever
    finally:
        for store in opened:
            store.close()


def at_ref(sessions, ref: str | None, repo: str | None,
           allowed: Collection[str] | None) -> tuple[str | None, Collection[str] | None]:
    """``(repo, allowed)`` for a ``who`` at the named ref ``ref`` (``None``: unchanged):
    the one ref source of that name (``shop@v2``, whose history stops at the ref's
    commit), or, when several repositories have it, all of them as the scope. Raises
    ``BadInput`` listing the indexed refs for an unknown one."""
    if ref is None:
        return repo, allowed
    from .refs import ref_graphs

    names = ref_graphs(sessions, ref, repo=repo, allowed=allowed)
    if len(names) == 1:
        return names[0], None if allowed is None else set(allowed) | set(names)
    return None, set(names)


def who_command(query: str, repo: str | None, as_json: bool, *, settings: Settings, ref: str | None = None) -> None:
    """``coderag who``: print the ranked owners and experts (JSON with ``--json``), at the
    named ref ``ref`` when given (its history up to the ref's commit). Raises
    ``EmptyIndex`` (exit 4) for a ``--repo`` nothing was indexed under, ``BadInput``
    (exit 2) for an unknown ``ref``."""
    from .refs import repo_at_ref

    sessions = open_database(settings)
    known = _known_repos(sessions)
    repo, ref = repo_at_ref(repo, ref, known)  # --repo shop@v2 reads as --repo shop --ref v2
    if repo is not None and repo not in known:
        raise _unknown_repo(sessions, repo)
    repo, allowed = at_ref(sessions, ref, repo, None)
    with lazy_retriever(settings, sessions) as retriever:
        res = run_who(query, sessions=sessions, settings=settings, retriever_factory=retriever, repo=repo,
                      allowed=allowed)
    if as_json:
        print(json.dumps(res.to_dict() if res else {"target": query, "experts": []}, default=str))
    else:
        print(format_who(res), end="")


# --------------------------------------------------------------------------- drift


def drift_command(source: str | None, as_json: bool, *, settings: Settings) -> None:
    """``coderag drift``: the stale references per doc and section (JSON with ``--json``).
    Raises ``EmptyIndex`` (exit 4) for a name that is neither an indexed repository nor a
    source with checked docs."""
    sessions = open_database(settings)
    try:
        report = drift_report(sessions, source)
    except BadInput:
        if source is not None and source not in _known_repos(sessions):
            raise _unknown_repo(sessions, source, "repo or space with checked docs") from None
        raise
    if as_json:
        print(json.dumps(report, default=str))
    else:
        print(format_drift(report), end="")


# --------------------------------------------------------------------------- chat


def chat_reply(service, name: str, arg: str, *, allowed: Collection[str] | None = None, mention: str = "",
               target: str | None = None) -> str:
    """The reply text of ``/coderag drift [space]`` or ``/coderag who …``, made inert for
    ``target`` (``"slack"`` or ``"teams"``; default ``"slack"`` when ``mention`` is) by the
    one escaping function (:func:`bot.chat.escape.inert`): commit subjects, CODEOWNERS
    lines and doc text can hold ``<!everyone>`` or masked links. ``mention="slack"``
    then writes the mapped users of a ``who`` answer as ``<@U…>`` (only those). Errors
    come back as text. The settings are the ``service``'s (``settings``, the
    :class:`~common.settings.AppSettings` read at start-up), its database ``sessions``
    when it has them."""
    from common.markup import inert

    target = target or ("slack" if mention == "slack" else None)
    settings = service.settings.core
    sessions = getattr(service, "sessions", None) or open_database(settings)
    res = None
    try:
        if name == "drift":
            report = drift_report(sessions, arg.strip() or None, allowed=allowed)
            text = format_drift(report, limit=20)
        else:
            from .refs import split_ref_option

            retriever = getattr(service, "retriever", None)
            arg, ref = split_ref_option(arg)  # `who billing/ --ref v2`: at a named ref
            repo, allowed = at_ref(sessions, ref, None, allowed)
            res = run_who(arg, sessions=sessions, settings=settings, repo=repo,
                          retriever_factory=(lambda: retriever) if retriever is not None else None, allowed=allowed)
            text = format_who(res)
    except CoderagError as exc:  # a bad argument, an unknown symbol: said in the thread
        text = f"⚠️ {exc}"
    if target:
        text = inert(text, target)
    if mention == "slack" and res is not None:
        for e in res.experts:
            if re.fullmatch(r"[UW][A-Z0-9]{2,20}", e.chat_user or ""):
                text = text.replace(f"(@{e.chat_user})", f"(<@{e.chat_user}>)")
    return text


# --------------------------------------------------------------------------- answers


def answer_notes(sessions, answer, result=None, *, settings: Settings | None = None, mention: str = "",
                 allowed: Collection[str] | None = None) -> list[str]:
    """Notes the answer service appends (never raises; ``[]`` when drift/who know nothing):

    * ``[n] this step names `--max-conn`, which the code dropped in 1a2b3c4; …`` for every
      cited doc section with a stale reference;
    * ``Owners: [1] @payments-team; [2] @alice`` from CODEOWNERS for the cited code;
    * ``Who to ask: …`` for a no-coverage or low-confidence answer, from the closest code.

    ``settings``: the storage group the caller read at start-up (``None``: the defaults).
    """
    if sessions is None:
        return []
    notes: list[str] = []
    try:
        settings = settings if settings is not None else defaults().core
        for i, c in enumerate(answer.citations, 1):
            if _is_doc(c.path):
                for ref in stale_in_section(sessions, c.repo, c.path, c.start_line, c.end_line,
                                            allowed=allowed)[:3]:
                    notes.append(f"[{i}] this step {stale_note(ref)}.")
        owners = []
        for i, c in enumerate(answer.citations, 1):
            if not _is_doc(c.path):
                o = owners_line(sessions, c.repo, c.path)
                if o:
                    owners.append(f"[{i}] {o}")
        if owners:
            notes.append("Owners: " + "; ".join(owners))
        low = answer.no_coverage or bool(answer.unverified_symbols) or bool(answer.invalid_citations) or (
            result is not None and not getattr(result, "has_name_match", True)
            and getattr(result, "best_cosine", 1.0) < LOW_CONFIDENCE_COSINE)
        hits = answer.hits or (result.hits if result is not None else [])
        if low and hits:
            locs = [(h.chunk.repo, h.chunk.path, h.chunk.start_line, h.chunk.end_line, h.chunk.symbol or h.chunk.path)
                    for h in hits if not _is_doc(h.chunk.path, getattr(h.chunk, "language", ""))]
            line = ask_line(experts_for_locations(sessions, settings, answer.question, locs), mention) if locs else ""
            if line:
                notes.append(line)
    except Exception as exc:  # noqa: BLE001 - an answer must never fail for its notes
        log.warning("drift/who notes skipped: %s", exc)
    return notes


# --------------------------------------------------------------------------- weekly digest


def digest_text(sessions, target: str | None = None) -> str:
    """The digest message: counts and the stale references per doc (or "" when none),
    made inert for ``target`` (``"slack"``/``"teams"``; doc text and commit subjects may
    hold chat markup such as ``<!everyone>``)."""
    from common.markup import inert

    report = drift_report(sessions)
    if not report["counts"]["stale"]:
        return ""
    text = "Weekly runbook drift digest\n\n" + format_drift(report, limit=40)
    return inert(text, target) if target else text


def post_digest() -> None:
    """APScheduler job: post :func:`digest_text` to ``CODERAG_DRIFT_DIGEST_CHANNEL`` (Slack,
    with ``SLACK_BOT_TOKEN``) and/or ``CODERAG_DRIFT_DIGEST_WEBHOOK`` (an incoming webhook,
    e.g. Teams). Failures are logged, never raised (the next week tries again). A job
    body the persistent job store calls by name: it takes the process's installed
    settings (:func:`common.settings.installed`)."""
    from common.markup import inert
    from common.settings import installed

    app = installed()
    settings, slack = app.core, app.slack

    text = digest_text(open_database(settings))  # built once, made inert per target below
    if not text:
        log.info("drift digest: nothing stale")
        return
    if settings.drift_digest_channel and slack.bot_token:
        try:
            from slack_sdk import WebClient

            WebClient(token=slack.bot_token, base_url=slack.api_url).chat_postMessage(
                channel=settings.drift_digest_channel, text=inert(text, "slack")[:39000])
        except Exception as exc:  # noqa: BLE001
            log.warning("drift digest: Slack post failed: %s", exc)
    if settings.drift_digest_webhook:
        try:
            import urllib.request

            req = urllib.request.Request(settings.drift_digest_webhook, data=json.dumps({"text": inert(text, "teams")}).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
            urllib.request.urlopen(req, timeout=30).close()
        except Exception as exc:  # noqa: BLE001
            log.warning("drift digest: webhook post failed: %s", type(exc).__name__)  # the URL is a secret


def digest_job_provider(settings: Settings):
    """A freshness-scheduler job provider adding ``drift:digest`` every
    ``CODERAG_DRIFT_DIGEST_DAYS`` days when a digest channel or webhook is configured in
    ``settings`` (the storage group)."""

    def provider(sched) -> None:
        if settings.drift_digest_channel or settings.drift_digest_webhook:
            sched.add_job("drift:digest", post_digest, seconds=settings.drift_digest_days * 86400)
        elif sched.scheduler.get_job("drift:digest") is not None:  # no longer configured
            sched.scheduler.remove_job("drift:digest")

    return provider


def stale_counts_line(counts: dict, name: str) -> str:
    """`` · 3 stale doc refs`` for ``coderag status`` (``""`` when none)."""
    n = (counts.get(name) or {}).get("stale", 0)
    return f" · {n} stale doc ref{'s' if n != 1 else ''}" if n else ""


__all__: Sequence[str] = ("answer_notes", "chat_reply", "digest_job_provider", "drift_command",
                          "post_digest", "run_who", "who_command")
