"""Answers that should not be (or not only be) a model's prose.

No coverage: when :mod:`.answerability` decides the sources do not cover the question,
the model is not called; :func:`no_coverage_text` says which indexed versions were
searched (used when none of the question's terms is indexed).

Staleness (:func:`staleness_notes`), per source record (``ChunkStore.sources.all()``) of the
repos cited:
- kind ``git`` with a local ``root``: the indexed ``commit`` is compared with the local
  ``HEAD`` and, when the branch tracks one, the last-fetched upstream (``@{upstream}``),
  both by ``git rev-parse`` in ``root`` (local only, never the network; 2 s timeout;
  cached for :data:`GIT_CACHE_SECONDS`). A missing folder or a git error is "unknown",
  not stale.
  When neither has moved (or they are unknown), an index older than
  ``CODERAG_STALE_HOURS`` (default 24 h) still gets a note: "the index of NAME is N hours old".
- kind ``confluence``: stale when ``indexed_at`` is older than
  ``CODERAG_CONFLUENCE_TTL_HOURS`` (default 24 h).
- kind ``git-ref`` (a named ref: a release tag or branch): never, it is read at its own
  commit on purpose (a moved ref is re-indexed by the next sync).
"""
from __future__ import annotations

import subprocess
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable, Sequence

from common.settings import ChatSettings, ConfluenceSettings
from indexer.read import vectors_percent

from ..retrieval.retriever import SearchResult
from .extractive import age_text

#: The declared defaults of ``CODERAG_CONFLUENCE_TTL_HOURS`` and ``CODERAG_STALE_HOURS`` (hours).
DEFAULT_CONFLUENCE_TTL_HOURS: float = ConfluenceSettings.model_fields["ttl_hours"].default
DEFAULT_STALE_HOURS: float = ChatSettings.model_fields["stale_hours"].default
GIT_CACHE_SECONDS = 60.0
GIT_TIMEOUT_SECONDS = 2.0

_git_cache: dict[str, tuple[float, dict[str, str]]] = {}
_git_lock = threading.Lock()


def source_at_commit(name: str, sha7: str) -> str:
    """A searched source and its commit: ``shop@1a2b3c4`` for a default branch, ``shop@v2
    at commit 1a2b3c4`` for a ref source (whose name already holds an ``@``)."""
    return f"{name} at commit {sha7}" if "@" in name else f"{name}@{sha7}"


def no_coverage_text(result: SearchResult, sources: Sequence[dict],
                     repos: Sequence[str] | None = None) -> str:
    """Says the indexed version(s) have nothing on the question, suggests what to try."""
    searched = [s for s in sources if not repos or s.get("name") in repos]
    where = ", ".join(source_at_commit(s["name"], str(s.get("commit", ""))[:7]) for s in searched) or "the index"
    return (f"The indexed version ({where}) has nothing on this question, so I won't guess. "
            "Try rephrasing with a function, file or error-message name from the code, "
            "or index the repository (or space) that holds the answer with `coderag index PATH`.")


def _git(root: str, *args: str) -> str | None:
    try:
        p = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True,
                           timeout=GIT_TIMEOUT_SECONDS)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else None


def local_heads(root: str) -> dict[str, str]:
    """``{"HEAD": sha, "upstream": sha}`` of the Git checkout at ``root`` (keys present only
    when known); cached per root for :data:`GIT_CACHE_SECONDS`."""
    now = time.monotonic()
    with _git_lock:
        hit = _git_cache.get(root)
        if hit and now - hit[0] < GIT_CACHE_SECONDS:
            return hit[1]
    heads: dict[str, str] = {}
    if root and Path(root).is_dir():
        head = _git(root, "rev-parse", "--verify", "-q", "HEAD")
        if head:
            heads["HEAD"] = head
            up = _git(root, "rev-parse", "--verify", "-q", "@{upstream}")
            if up:
                heads["upstream"] = up
    with _git_lock:
        _git_cache[root] = (now, heads)
    return heads


def clear_git_cache() -> None:
    with _git_lock:
        _git_cache.clear()


def _aware(dt: datetime | None) -> datetime | None:
    if dt is not None and dt.tzinfo is None:
        return dt.replace(tzinfo=timezone.utc)
    return dt


def staleness_notes(sources: Sequence[dict], repos: Iterable[str],
                    now: datetime | None = None, max_age_hours: float | None = None,
                    confluence_ttl_hours: float | None = None) -> list[str]:
    """One warning per cited source that is known to be behind, or (a git source) whose
    index is older than ``max_age_hours`` (``CODERAG_STALE_HOURS``; default
    :data:`DEFAULT_STALE_HOURS`), or (a Confluence source) older than
    ``confluence_ttl_hours`` (``CODERAG_CONFLUENCE_TTL_HOURS``; default
    :data:`DEFAULT_CONFLUENCE_TTL_HOURS`), and one note per cited source whose first index
    is still filling in vectors ("vectors 40% done"); empty when all are fresh and complete
    (or freshness is unknown). The caller passes the hours from its settings; nothing
    here reads the environment."""
    now = now or datetime.now(timezone.utc)
    max_age = DEFAULT_STALE_HOURS if max_age_hours is None else max_age_hours
    ttl = DEFAULT_CONFLUENCE_TTL_HOURS if confluence_ttl_hours is None else confluence_ttl_hours
    wanted = set(repos)
    notes: list[str] = []
    for s in sources:
        if s.get("name") not in wanted:
            continue
        name, commit = s["name"], str(s.get("commit") or "")
        indexed_at = _aware(s.get("indexed_at"))
        pct = vectors_percent(s)
        if pct is not None:  # a first index: committed keyword-ready, vectors still coming
            notes.append(f"Note: {name} is still being indexed (vectors {pct}% done): until then its chunks "
                         "without a vector are found by keyword and name only.")
        if s.get("base"):  # a named ref (a release tag, a branch): read at its own commit, on purpose
            continue
        if s.get("kind") == "confluence":
            if indexed_at is None or now - indexed_at > timedelta(hours=ttl):
                notes.append(f"Warning: {name} (Confluence) was indexed {age_text(indexed_at, now)}, "
                             f"older than its {ttl:g} h freshness window; the page may have changed.")
            continue
        heads = local_heads(str(s.get("root") or ""))
        moved = {k: v for k, v in heads.items() if commit and v != commit}
        if moved:
            which = ", ".join(f"{'local HEAD' if k == 'HEAD' else 'upstream'} is at {v[:7]}"
                              for k, v in moved.items())
            notes.append(f"Warning: {name} was indexed at {commit[:7]} ({age_text(indexed_at, now)}) "
                         f"but {which}; the answer may be out of date (re-run `coderag index`).")
        elif indexed_at is not None and now - indexed_at > timedelta(hours=max_age):
            hours = int((now - indexed_at).total_seconds() // 3600)
            notes.append(f"Warning: the index of {name} is {hours} hour{'s' if hours != 1 else ''} old "
                         f"(indexed at {commit[:7] or '?'}, older than CODERAG_STALE_HOURS={max_age:g}); "
                         f"the code may have changed since (re-run `coderag index` or `coderag sync repo {name}`).")
    return notes
