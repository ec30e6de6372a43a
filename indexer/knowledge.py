"""Knowledge hooks: keep runbook drift and "who knows this" fresh with the index.

:func:`subscribers` gives the two subscribers every indexing pipeline is built with
(:class:`WhoSubscriber`, :class:`DriftSubscriber`; see
:class:`indexer.results.Subscriber`): after each committed run they update authorship
and re-check the docs the run changed, reading the documents the run already decoded.
The functions below are the same work called directly (they never raise: a failure is
logged and the caller goes on; drift and ``who`` catch up on the next run):

* :func:`on_repo_indexed` for a repo indexed at a commit: full runs pass
  ``changed_paths=None``, pushes pass the changed and deleted paths;
* :func:`on_docs_indexed` for Confluence pages (their Markdown);
* :func:`on_source_removed` when a repo or space leaves the index (:func:`on_index_reset`
  for all of them).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from sqlalchemy.orm import sessionmaker

from common.settings import Settings

from .models import KIND_CONFLUENCE, KIND_GIT, KIND_GIT_REF

if TYPE_CHECKING:
    from .pipeline import IndexingPipeline, RunEvent

log = logging.getLogger(__name__)


class WhoSubscriber:
    """Adds the authorship of a Git run's new commits (``who``); keeps no documents."""

    name = "who knows this"

    def wants(self, kind: str, path: str) -> bool:
        """Never: authorship is read from the history, not from the documents."""
        return False

    def __call__(self, pipeline: "IndexingPipeline", event: "RunEvent") -> None:
        # a named ref too: `who --ref` reads the history up to the ref's commit
        if pipeline.sessions is None or event.kind not in (KIND_GIT, KIND_GIT_REF):
            return
        from .experts.service import refresh_history

        refresh_history(pipeline.sessions, pipeline.settings, event.source, event.root, event.commit)

    def removed(self, pipeline: "IndexingPipeline", source: str) -> None:
        """``source`` left the index (a named ref no longer selected): its authorship goes."""
        if pipeline.sessions is not None:
            on_source_removed(pipeline.sessions, source)


class DriftSubscriber:
    """Re-checks the runbook references of the docs a run changed (Markdown/RST files of
    a repo, Confluence pages), from the documents the run decoded."""

    name = "runbook drift"

    def wants(self, kind: str, path: str) -> bool:
        """The docs drift reads: Markdown/reStructuredText files and Confluence pages."""
        from .drift.extract import is_doc_path

        return kind == KIND_CONFLUENCE or (kind == KIND_GIT and is_doc_path(path))

    def __call__(self, pipeline: "IndexingPipeline", event: "RunEvent") -> None:
        if pipeline.sessions is None:
            return
        if event.kind == KIND_GIT:
            from .drift.service import refresh_repo

            refresh_repo(pipeline.sessions, pipeline.settings, event.source, event.root, event.commit,
                         changed_paths=None if event.changed_paths is None else sorted(event.changed_paths),
                         deleted_paths=sorted(event.deleted_paths),
                         texts={p: d.text for p, d in event.documents.items()})
        elif event.kind == KIND_CONFLUENCE:
            from .drift.service import DocText, record_docs

            docs = [DocText(d.path, d.text, d.title, d.url) for d in event.documents.values()]
            record_docs(pipeline.sessions, pipeline.settings, event.source, docs,
                        deleted=sorted(event.deleted_paths))


def subscribers() -> list:
    """The subscribers an indexing pipeline is built with, in order: authorship first,
    then drift (which reads it for "who changed this")."""
    return [WhoSubscriber(), DriftSubscriber()]


def on_repo_indexed(sessions: sessionmaker, settings: Settings, repo: str, root: str | Path, commit: str, *,
                    changed_paths: Iterable[str] | None = None, deleted_paths: Iterable[str] = (),
                    texts: Mapping[str, str] | None = None) -> dict:
    """Refresh the repo's authorship (``expert_changes``) and its docs' references, and
    re-resolve every reference linked to it. ``texts``: docs already decoded, by path
    (the others are read from ``commit``). Returns ``{"drift": stats, "history_rows": n}``
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
                                    deleted_paths=list(deleted_paths), texts=texts)
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
