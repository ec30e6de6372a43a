"""The answer without an LLM: lead sentences built from the best chunks, and their citations.

Used by ``coderag ask`` when no ``ANTHROPIC_API_KEY`` is set, and as the fallback when
the LLM is unreachable.
"""
from __future__ import annotations

import re

from dataclasses import dataclass
from datetime import datetime, timezone

from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    from ..retrieval.retriever import SearchHit, SearchResult

SNIPPET_LINES = 8
FIRST_SNIPPET_LINES = 6
MAX_CITED = 5


@dataclass
class CitedLines:
    """Lines of one file of a source at one commit, as an answer cites them (and as the
    query log keeps each cited chunk: :class:`bot.querylog.browse.Citation`)."""

    repo: str
    path: str
    start_line: int
    end_line: int
    commit: str

    @property
    def span(self) -> str:
        """``path:start-end@sha7``."""
        return f"{self.path}:{self.start_line}-{self.end_line}@{self.commit[:7]}"

    @property
    def label(self) -> str:
        """``path:start-end@sha7`` (:attr:`span`)."""
        return self.span

    @property
    def ref(self) -> str:
        """The one citation format of text answers: ``repo/path:start-end@sha7``."""
        return f"{self.repo}/{self.span}" if self.repo else self.span


@dataclass
class Citation(CitedLines):
    """A source the answer points at: the cited lines, the symbol there and when the
    source was indexed."""

    symbol: str
    indexed_at: datetime | None


#: The head of an OpenAPI operation chunk (indexer.chunking.openapi): ``GET /orders/{id}
#: (openapi.yaml, spec 3.2.1)``, the way such a source is cited.
_API_HEAD = re.compile(r"OpenAPI operation (\S+ \S+ \([^()\n]+, spec [^()\n]*\))")


def cited_symbol(chunk) -> str:
    """What a citation names: the symbol, or for an OpenAPI operation its method, path,
    spec file and spec version."""
    if getattr(chunk, "kind", "") == "api_operation":
        m = _API_HEAD.match(getattr(chunk, "content", "") or "")
        if m:
            return m.group(1)
    return chunk.symbol


def citation_for(hit: SearchHit) -> Citation:
    c = hit.chunk
    return Citation(repo=c.repo, path=c.path, start_line=c.start_line, end_line=c.end_line,
                    commit=c.commit, symbol=cited_symbol(c), indexed_at=c.indexed_at)


def age_text(then: datetime | None, now: datetime | None = None) -> str:
    """Human age of an index time: ``"just now"``, ``"5 min ago"``, ``"2 h ago"``, ``"3 days ago"``."""
    if then is None:
        return "at an unknown time"
    now = now or datetime.now(timezone.utc)
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    secs = max(0, int((now - then).total_seconds()))
    if secs < 60:
        return "just now"
    if secs < 3600:
        return f"{secs // 60} min ago"
    if secs < 86400:
        return f"{secs // 3600} h ago"
    return f"{secs // 86400} days ago"


def snippet(content: str, lines: int = SNIPPET_LINES) -> str:
    """First ``lines`` non-blank lines of a chunk (the signature and docstring, usually)."""
    kept = [ln for ln in content.splitlines() if ln.strip()][:lines]
    return "\n".join(kept)


def extractive_answer(result: SearchResult, max_cited: int = MAX_CITED, *,
                      lookup: Callable[[str], list[str]] | None = None,
                      defines: Callable[[str, Sequence[str]], list] | None = None) -> tuple[str, list[Citation]]:
    """The answer without an LLM: ``(lead, citations)``.

    ``lead``: one or two sentences built from the code (:func:`.lead.lead`: the best
    definition and what its docstring says; the setting and its default for a
    configuration question); it plays the part of a model's prose, so every front end
    shows it first and then lists the ``max_cited`` best sources once, in its own format.
    ``lookup(key)``: texts of chunks that mention a configuration key (for its default).
    ``defines(repo, names)``: chunks defining those symbols (for a prose top hit).
    With no hits, the lead says so and there are no citations. (Whether the hits cover the
    question is decided before, by :mod:`.answerability`.)
    """
    from .lead import lead

    if not result.hits:
        return ("I found nothing relevant to this question in the index. "
                "Try naming a function, file or error message, or index the repository that holds it."), []
    cites = [citation_for(h) for h in result.hits[:max(1, max_cited)]]
    return lead(result.question, result.hits, lookup=lookup, defines=defines), cites
