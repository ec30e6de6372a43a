"""``changes <path|symbol|question> [--since 7d] [--ref REF]``: the commits that touched
the matching code in a time window, with the functions they changed (read by
:func:`indexer.read.changes_report` from the repository's local Git directory).

A path (file or ``folder/``) of an indexed repo or a symbol of the call graph is looked
up directly; a question is answered from the files of its top code hits. The same
function builds the CLI's output, the ``/coderag changes`` reply and ``ask``'s "Recent
changes" note.
"""
from __future__ import annotations

import json
import logging
import re
from datetime import datetime
from typing import Collection

from common.db import open_database
from common.errors import BadInput, CoderagError
from common.settings import Settings
from indexer.read import CHANGE_WORDS, ChangesReport, changes_report, parse_since, question_since

from .knowledge import (_is_doc, _known_repos, _no_such_path, _unknown_repo, lazy_retriever, looks_like_path,
                        looks_like_symbol)
from .knowledge_text import format_changes

log = logging.getLogger(__name__)

DEFAULT_SINCE = "7d"
#: Commits listed by ``ask``'s "Recent changes" note (all of the window's are counted).
NOTE_COMMITS = 5
#: ``/coderag changes … --since 2w --ref main``: the options a chat argument may end with.
_CHAT_OPTIONS = ("--since", "--ref")


def hit_locations(hits) -> list[tuple[str, str, int, int, str]]:
    """``(repo, path, start, end, label)`` of the code hits (docs skipped), best first."""
    return [(h.chunk.repo, h.chunk.path, h.chunk.start_line, h.chunk.end_line, h.chunk.symbol or h.chunk.path)
            for h in hits if not _is_doc(h.chunk.path, getattr(h.chunk, "language", ""))]


def run_changes(query: str, *, sessions, settings: Settings, since: datetime, ref: str | None = None,
                retriever_factory=None, repo: str | None = None, allowed: Collection[str] | None = None):
    """The :class:`~indexer.read.ChangesReport` for ``query`` (``None`` when a question
    finds no code). A one-word query that reads as a path but is no indexed file raises
    ``BadInput`` with the closest paths; another single word that is no symbol raises
    ``UnknownSymbol``."""
    if not query or not query.strip():
        raise BadInput("changes needs a path, a symbol or a question")
    report = changes_report(sessions, settings, query.strip(), since=since, ref=ref, repo=repo, allowed=allowed)
    if report is not None:
        return report
    if looks_like_path(query):
        raise BadInput(_no_such_path(sessions, query, repo, allowed))
    if looks_like_symbol(query) or len(query.split()) == 1:
        from .impact import UnknownSymbol

        raise UnknownSymbol(f"no indexed symbol {query.strip()}; give an indexed path, a symbol or a question")
    for word in _code_words(query):  # "who changed wait_exponential this year?": that symbol's commits
        named = changes_report(sessions, settings, word, since=since, ref=ref, repo=repo, allowed=allowed)
        if named is not None and named.kind == "symbol":
            named.query = query.strip()
            return named
    if not topic_words(query):  # "what changed today?": the whole repository
        return _whole_repos(query, sessions=sessions, settings=settings, since=since, ref=ref, repo=repo,
                            allowed=allowed)
    if retriever_factory is None:
        return None
    hits = retriever_factory().search(query, top_k=8, repos=[repo] if repo else None, allowed=allowed).hits
    locations = hit_locations(hits)
    if not locations:
        return None
    return changes_report(sessions, settings, query.strip(), since=since, ref=ref, repo=repo, allowed=allowed,
                          locations=locations)


def window_start(query: str, since: str | None) -> datetime:
    """The window's start for ``query``: ``since`` when given (``--since``), else the
    window the query names ("since last month", "today": :func:`indexer.read.question_since`,
    UTC calendar), else :data:`DEFAULT_SINCE`. A bad ``since`` raises ``BadInput``."""
    if since is not None:
        return parse_since(since)
    return question_since(query) or parse_since(DEFAULT_SINCE)


#: Words of a change question that name no code ("what has changed in the repo so far?").
_NO_TOPIC = frozenset("""
a an the what which has have had did does do been was were is are any anything something of to in on for at by
there us me our my we i you repo repository repositories codebase code project everything all so far new
""".split())


def topic_words(question: str) -> list[str]:
    """The words of ``question`` that name something (not :data:`indexer.read.CHANGE_WORDS`,
    question words, numbers or dates): ``[]`` for "what changed today?"."""
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_./-]*", question or "")
    return [w for w in words if w.lower() not in CHANGE_WORDS and w.lower() not in _NO_TOPIC]


def _code_words(question: str) -> list[str]:
    """The words of a question written as code (``wait_exponential``, ``Invoice.tax``,
    ``retryWithBackoff``), in order; a single-word query is the caller's."""
    if len(question.split()) < 2:
        return []
    words = [w.strip("`'\"?,.!:;()") for w in question.split()]
    return [w for w in words if w and looks_like_symbol(w) and not looks_like_path(w)]


def _whole_repos(query: str, *, sessions, settings: Settings, since: datetime, ref: str | None,
                 repo: str | None, allowed: Collection[str] | None):
    """The report for a question that names no code: every commit of the window of
    ``repo`` (else of each repository in scope, at most three), as for a folder."""
    from indexer.read import knowledge_repos

    names = [repo] if repo else sorted(r for r in knowledge_repos(sessions) if allowed is None or r in allowed)
    if not names:
        return None
    report = changes_report(sessions, settings, query.strip(), since=since, ref=ref, repo=repo, allowed=allowed,
                            locations=[(r, "", None, None, "") for r in names[:3]])
    if report is not None:
        report.kind = "path"
    return report


def changes_command(query: str, since: str | None, ref: str | None, repo: str | None, as_json: bool, *,
                    settings: Settings) -> None:
    """``coderag changes``: print the commits and changed functions (JSON with ``--json``).
    Without ``since`` the window is the one the query names, else the last 7 days. A
    bad ``--since`` is a usage error (exit 2) before anything is opened; an unknown
    ``--repo`` is ``EmptyIndex`` (exit 4)."""
    when = window_start(query, since)
    sessions = open_database(settings)
    if repo is not None and repo not in _known_repos(sessions):
        raise _unknown_repo(sessions, repo)
    with lazy_retriever(settings, sessions) as retriever:
        report = run_changes(query, sessions=sessions, settings=settings, since=when, ref=ref,
                             retriever_factory=retriever, repo=repo)
    if as_json:
        empty = ChangesReport(query=query, kind="question", since=when.isoformat())  # no code matches
        print(json.dumps((report or empty).to_dict()))
    elif report is None:
        print(f"No indexed code matches {query!r}.")
    else:
        print(format_changes(report), end="")


def split_chat_arg(arg: str) -> tuple[str, str | None, str | None]:
    """``"billing/ --since 2w --ref main"`` → ``("billing/", "2w", "main")``; an option
    not given is ``None``."""
    words = arg.split()
    query: list[str] = []
    since: str | None = None
    ref: str | None = None
    i = 0
    while i < len(words):
        w = words[i]
        if w in _CHAT_OPTIONS and i + 1 < len(words):
            if w == "--since":
                since = words[i + 1]
            else:
                ref = words[i + 1]
            i += 2
            continue
        query.append(w)
        i += 1
    return " ".join(query), since, ref


def chat_changes(service, arg: str, *, allowed: Collection[str] | None = None, target: str = "slack") -> str:
    """The reply text of ``/coderag changes <path|symbol|question> [--since 7d] [--ref REF]``,
    made inert for ``target``; errors come back as text."""
    from common.markup import inert

    settings = service.settings.core
    sessions = getattr(service, "sessions", None) or open_database(settings)
    query, since, ref = split_chat_arg(arg)
    try:
        when = window_start(query, since)
        retriever = getattr(service, "retriever", None)
        report = run_changes(query, sessions=sessions, settings=settings, since=when, ref=ref,
                             retriever_factory=(lambda: retriever) if retriever is not None else None,
                             allowed=allowed)
        text = format_changes(report) if report is not None else f"No indexed code matches {query}."
    except CoderagError as exc:
        text = f"⚠️ {exc}"
    return inert(text, target)


def recent_changes_note(sessions, settings: Settings, question: str, hits, *, since: str | None = None,
                        allowed: Collection[str] | None = None, limit: int = NOTE_COMMITS) -> str:
    """``ask``'s "Recent changes" note for a question asking what changed or who touched
    something: the commits (and their authors) of the window touching the files of the
    question's top code hits, saying for each definition found which commits changed its
    lines and which touched only its file (:func:`format_changes`); when none did, it
    says so. The window is the one the question names ("this week", "today", "since last
    month": UTC calendar), else ``since``, else :data:`DEFAULT_SINCE`. All the window's
    commits are counted; the newest ``limit`` are listed. ``""`` when the question has no
    code hits or on any failure: a note never breaks an answer."""
    try:
        locations = hit_locations(hits)
        if not locations:
            return ""
        start = question_since(question) or parse_since(since or DEFAULT_SINCE)
        report = changes_report(sessions, settings, question, since=start, allowed=allowed, locations=locations)
        if report is None or not report.targets:
            return ""
        return "Recent changes: " + format_changes(report, limit=limit).rstrip("\n")
    except Exception as exc:  # noqa: BLE001
        log.warning("recent changes note failed: %s", exc)
        return ""
