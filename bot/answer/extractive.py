"""The answer without an LLM: the best chunks, cited, with a short snippet each.

Used by ``coderag ask`` when no ``ANTHROPIC_API_KEY`` is set, and as the fallback when
the LLM is unreachable.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..retrieval.retriever import SearchHit, SearchResult

SNIPPET_LINES = 8
MAX_CITED = 3


@dataclass
class Citation:
    """A source the answer points at: ``path:start-end@sha7``."""

    repo: str
    path: str
    start_line: int
    end_line: int
    commit: str
    symbol: str
    indexed_at: datetime | None

    @property
    def label(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}@{self.commit[:7]}"


def citation_for(hit: SearchHit) -> Citation:
    c = hit.chunk
    return Citation(repo=c.repo, path=c.path, start_line=c.start_line, end_line=c.end_line,
                    commit=c.commit, symbol=c.symbol, indexed_at=c.indexed_at)


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


def extractive_answer(result: SearchResult, max_cited: int = MAX_CITED) -> tuple[str, list[Citation]]:
    """Plain-text answer and its citations.

    With no hits, says so. (Whether the hits cover the question is decided before, by
    :mod:`.answerability`; this function lists what it is given.)
    """
    if not result.hits:
        repos = sorted({f"{h.chunk.repo}@{h.chunk.commit[:7]}" for h in result.hits})
        where = ", ".join(repos) if repos else "the index"
        return (f"I found nothing relevant to this question in {where}. "
                "Try naming a function, file or error message, or index the repository that holds it."), []
    cites = [citation_for(h) for h in result.hits[:max_cited]]
    parts = [f"Most relevant code for: {result.question}", ""]
    for i, (hit, cite) in enumerate(zip(result.hits, cites), 1):
        sym = f" {cite.symbol}" if cite.symbol else ""
        parts.append(f"[{i}] {cite.label}{sym} ({hit.chunk.kind}, indexed {age_text(cite.indexed_at)})")
        parts.extend("    " + ln for ln in snippet(hit.chunk.content).splitlines())
        parts.append("")
    return "\n".join(parts).rstrip() + "\n", cites
