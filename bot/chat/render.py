"""Format-neutral rendering helpers shared by Block Kit (Slack) and Adaptive Cards (Teams).

Nothing here escapes text: each front end escapes for its own markup.
"""
from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Collection, Iterable, Sequence

from bot.answer.extractive import Citation, age_text
from bot.chat.links import source_url

if TYPE_CHECKING:
    from bot.chat.turn import AnswerPort

log = logging.getLogger(__name__)


def freshness_pairs(citations: Sequence[Citation]) -> list[tuple[str, str, datetime | None]]:
    """``(repo, commit, indexed_at)`` for each distinct (repo, commit) cited, in citation order."""
    seen: "OrderedDict[tuple[str, str], datetime | None]" = OrderedDict()
    for c in citations:
        seen.setdefault((c.repo, c.commit), c.indexed_at)
    return [(repo, commit, at) for (repo, commit), at in seen.items()]


@dataclass(frozen=True)
class Markup:
    """How one front end writes the pieces of a citation line and the freshness line:
    ``link(url, label)`` a live link, ``label(text)`` the plain ``path:start-end@sha``
    label (no link template), ``symbol(name)``, ``text(s)`` escaped plain text (the repo)
    and ``sha(s)`` the short commit. Each front end passes its own escaping."""

    link: Callable[[str, str], str]
    label: Callable[[str], str]
    symbol: Callable[[str], str]
    text: Callable[[str], str]
    sha: Callable[[str], str]


def citation_label(c: Citation, templates: dict[str, str], markup: Markup, n: int | None = None) -> str:
    """``[n] <link to path:L10-L24> symbol · repo@sha7`` in ``markup``: linked to the file at
    the indexed commit when ``templates`` has one for the repo (:func:`source_url`), the
    plain label otherwise."""
    url = source_url(templates, c.repo, c.commit, c.path, c.start_line, c.end_line)
    ref = markup.link(url, f"{c.path}:L{c.start_line}-L{c.end_line}") if url else markup.label(c.label)
    sym = f" {markup.symbol(c.symbol)}" if c.symbol else ""
    num = f"[{n}] " if n is not None else ""
    return f"{num}{ref}{sym} · {markup.text(c.repo)}@{markup.sha(c.commit[:7])}"


def freshness_line(citations: Sequence[Citation], markup: Markup, now: datetime | None = None) -> str:
    """``repo@sha7 indexed 2 h ago`` for each distinct (repo, commit) cited, joined by `` · ``."""
    return " · ".join(f"{markup.text(repo)}@{markup.sha(commit[:7])} indexed {age_text(at, now)}"
                      for repo, commit, at in freshness_pairs(citations))


def segments(text: str) -> list[tuple[str, list[str]]]:
    """Answer text → ``("code"|"text", lines)`` runs: lines indented by 4 spaces (the
    extractive answer's snippets) are code, with the indent removed; blank lines inside a
    snippet stay in it and trailing blank code lines are dropped."""
    segs: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        kind = "code" if line.startswith("    ") else "text"
        if not line.strip() and segs and segs[-1][0] == "code":
            kind = "code"  # a blank line inside a snippet
        body = line[4:] if kind == "code" else line
        if segs and segs[-1][0] == kind:
            segs[-1][1].append(body)
        else:
            segs.append((kind, [body]))
    cleaned = []
    for kind, lines in segs:
        while kind == "code" and lines and not lines[-1].strip():
            lines.pop()
        if lines:
            cleaned.append((kind, lines))
    return cleaned


# --------------------------------------------------------------------------- impact

def split_callers(report: dict) -> tuple[list[dict], list[dict]]:
    """``(code callers, test callers)`` of an impact report (``is_test`` flag)."""
    callers = report.get("callers") or []
    return [c for c in callers if not c.get("is_test")], [c for c in callers if c.get("is_test")]


def group_by_file(items: Iterable[dict]) -> "OrderedDict[str, list[dict]]":
    """Callers grouped by ``path``, files and calls sorted by (path, line)."""
    files: "OrderedDict[str, list[dict]]" = OrderedDict()
    for c in sorted(items, key=lambda c: (c.get("path", ""), c.get("line", 0))):
        files.setdefault(c.get("path", ""), []).append(c)
    return files


def call_notes(call: dict) -> list[str]:
    """Qualifiers of one call site: ``depth N`` (transitive), ``unresolved: name match only``."""
    extra = []
    if call.get("depth", 1) and call.get("depth", 1) > 1:
        extra.append(f"depth {call['depth']}")
    if call.get("resolved") is False:
        extra.append("unresolved: name match only")
    return extra


@dataclass
class Lookup:
    """Result of a service call for a command: ``value`` on success, else ``message`` —
    user-facing text (``user_error`` True: the user's input, e.g. an unknown symbol)."""

    value: object = None
    message: str | None = None
    user_error: bool = False


def lookup_impact(service: "AnswerPort", symbol: str, allowed: Collection[str] | None = None) -> Lookup:
    """``service.impact(symbol)`` restricted to ``allowed`` (``None`` = all sources): the
    report dict as ``value``. Unknown/ambiguous symbols (``CoderagError``) become a user
    error; anything else is logged and becomes the apology."""
    from common.errors import CoderagError

    from ..refs import split_ref_option

    symbol, ref = split_ref_option(symbol)  # `impact Cart.total --ref v2`: at a named ref
    try:
        report = service.impact(symbol, allowed=allowed, ref=ref)
    except CoderagError as exc:
        return Lookup(message=str(exc), user_error=True)
    except Exception:
        log.exception("impact(%r) failed", symbol)
        return Lookup(message=apology_message())
    return Lookup(value=report)


def lookup_status(service: "AnswerPort", allowed: Collection[str] | None = None) -> Lookup:
    """``service.status()`` restricted to ``allowed`` (``None`` = all sources): the list of
    sources as ``value``; failures are logged and apologised for."""
    try:
        return Lookup(value=service.status(allowed=allowed))
    except Exception as exc:
        log.exception("status failed")
        return Lookup(message=apology_message(exc))


# --------------------------------------------------------------------------- status

def as_datetime(value) -> datetime | None:
    """A datetime from a datetime or ISO-8601 text (``Z`` allowed); None when unreadable."""
    if value is None or isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass
class SourceRow:
    """One indexed source for ``status``: ``at`` is timezone-aware UTC or None;
    ``stale`` when older than the threshold or of unknown age; ``when`` is display text."""

    name: str
    commit: str
    chunks: object
    at: datetime | None
    stale: bool
    when: str


def source_row(source: dict, stale_hours: float, now: datetime) -> SourceRow:
    """A ``service.status()`` row (a source record as a dict) as a :class:`SourceRow`
    (``stale_hours`` in hours)."""
    at = as_datetime(source.get("indexed_at"))
    if at is not None and at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    stale = at is None or (now - at).total_seconds() > stale_hours * 3600
    when = at.strftime("%Y-%m-%d %H:%M UTC") if at else "unknown time"
    return SourceRow(name=str(source.get("name", "?")), commit=str(source.get("commit", ""))[:7],
                     chunks=source.get("chunks", "?"), at=at, stale=stale, when=when)


# --------------------------------------------------------------------------- errors

def apology_message(exc: BaseException | None = None) -> str:
    """The short text shown when answering failed (no emoji; front ends add their own).
    A ``CoderagError``'s message is meant for users and is shown; others are not."""
    from common.errors import CoderagError

    if isinstance(exc, CoderagError):
        return f"Sorry, I couldn't answer that: {exc}"
    return ("Sorry, something went wrong while I was searching the code index. "
            "The error was logged; please try again in a few minutes.")
