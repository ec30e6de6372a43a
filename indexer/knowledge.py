"""Knowledge hooks: keep runbook drift and "who knows this" fresh with the index.

The indexing pipeline calls these three functions (they never raise: a failure is
logged and the index run goes on; drift and ``who`` catch up on the next run):

* :func:`on_repo_indexed` after a repo's chunks, call graph and state are written:
  full runs pass ``changed_paths=None``, pushes pass the changed and deleted paths;
* :func:`on_docs_indexed` after Confluence pages are written (their Markdown);
* :func:`on_source_removed` when a repo or space leaves the index (:func:`on_index_reset`
  for all of them).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterable, Sequence

from sqlalchemy.orm import sessionmaker

from common.settings import Settings

log = logging.getLogger(__name__)


def on_repo_indexed(sessions: sessionmaker, settings: Settings, repo: str, root: str | Path, commit: str, *,
                    changed_paths: Iterable[str] | None = None, deleted_paths: Iterable[str] = ()) -> dict:
    """Refresh the repo's authorship (``expert_changes``) and its docs' references, and
    re-resolve every reference linked to it. Returns ``{"drift": stats, "history_rows": n}``
    (``{}`` on failure)."""
    from .drift.service import refresh_repo
    from .experts.service import refresh_history

    out: dict = {}
    try:
        out["history_rows"] = refresh_history(sessions, settings, repo, root, commit)
    except Exception as exc:  # noqa: BLE001 - never fail the index run
        log.warning("who: could not read the history of %s: %s", repo, exc)
    try:
        out["drift"] = refresh_repo(sessions, settings, repo, root, commit,
                                    changed_paths=None if changed_paths is None else list(changed_paths),
                                    deleted_paths=list(deleted_paths))
    except Exception as exc:  # noqa: BLE001
        log.warning("drift: could not check the docs of %s: %s", repo, exc)
    return out


def on_docs_indexed(sessions: sessionmaker, settings: Settings, source: str,
                    docs: Sequence[tuple[str, str, str, str]], *, deleted: Iterable[str] = ()) -> dict:
    """Check Confluence pages of ``source``: ``docs`` are ``(path, markdown, title, url)``."""
    from .drift.service import DocText, record_docs

    try:
        return record_docs(sessions, settings, source, [DocText(p, t, title, url) for p, t, title, url in docs],
                           deleted=list(deleted))
    except Exception as exc:  # noqa: BLE001
        log.warning("drift: could not check the pages of %s: %s", source, exc)
        return {}


def on_index_reset(sessions: sessionmaker) -> None:
    """Drop every source's references, repo records and authorship rows (``coderag reset``)."""
    from .drift.service import drift_counts, knowledge_repos

    for name in set(drift_counts(sessions)) | set(knowledge_repos(sessions)):
        on_source_removed(sessions, name)


def on_source_removed(sessions: sessionmaker, source: str) -> None:
    """Drop the source's references, repo record and authorship rows."""
    from .drift.service import forget_source
    from .experts.service import forget_repo

    try:
        forget_source(sessions, source)
        forget_repo(sessions, source)
    except Exception as exc:  # noqa: BLE001
        log.warning("drift/who: could not forget %s: %s", source, exc)
