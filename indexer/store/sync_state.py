"""Reads and writes of ``index_state`` (one row per source; see :mod:`.models`)."""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import delete, select
from sqlalchemy.orm import sessionmaker

from .sql_models import ConfluencePage, IndexState


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def aware(dt: datetime | None) -> datetime | None:
    """SQLite returns naive datetimes; they are stored as UTC."""
    if dt is not None and dt.tzinfo is None:
        return dt.replace(tzinfo=timezone.utc)
    return dt


def get_state(sessions: sessionmaker, name: str) -> IndexState | None:
    """The row of source ``name`` (detached), or ``None`` before its first run."""
    with sessions() as s:
        return s.get(IndexState, name)


def all_states(sessions: sessionmaker) -> dict[str, IndexState]:
    """Every source's row by name."""
    with sessions() as s:
        return {r.name: r for r in s.execute(select(IndexState)).scalars()}


def forget_sources(sessions: sessionmaker, names: list[str] | None = None) -> int:
    """Drop what SQL remembers of indexed sources ``names`` (``None``: all of them): their
    ``index_state`` row (last indexed commit, errors) and Confluence page versions, so
    the next sync re-indexes them in full instead of diffing from, or skipping by, a
    version that is no longer in the index. Returns the number of state rows deleted."""
    with sessions.begin() as s:
        q_state, q_pages = delete(IndexState), delete(ConfluencePage)
        if names is not None:
            q_state = q_state.where(IndexState.name.in_(names))
            q_pages = q_pages.where(ConfluencePage.source.in_(names))
        s.execute(q_pages)
        return s.execute(q_state).rowcount or 0


def _upsert(sessions: sessionmaker, name: str, kind: str, **values) -> None:
    with sessions.begin() as s:
        row = s.get(IndexState, name)
        if row is None:
            row = IndexState(name=name, kind=kind, commit="", last_mode="")
            s.add(row)
        row.kind = kind
        for k, v in values.items():
            setattr(row, k, v)


def record_success(sessions: sessionmaker, name: str, kind: str, *, commit: str = "", mode: str = "",
                   indexed_at: datetime | None = None, cursor: datetime | None = None,
                   reconciled: bool = False) -> None:
    """After a successful run: the indexed ``commit`` (git) and times; clears the error."""
    now = indexed_at or utcnow()
    values = dict(commit=commit, indexed_at=now, last_attempt_at=now, last_error=None, last_mode=mode)
    if cursor is not None:
        values["cursor"] = cursor
    if reconciled:
        values["last_reconciled_at"] = now
    _upsert(sessions, name, kind, **values)


def record_error(sessions: sessionmaker, name: str, kind: str, error: str) -> None:
    """After a failed run: keep the last indexed commit, store the one-line error (URL
    credentials and known secret values masked: :func:`common.redact.redact_text`)."""
    from common.redact import redact_text

    _upsert(sessions, name, kind, last_attempt_at=utcnow(), last_error=redact_text(str(error))[:2000])


def mark_ref_source(sessions: sessionmaker, name: str) -> None:
    """Before a ref source's first write (:mod:`indexer.sources.refs`): its state row, kind
    ``git-ref``, so readers of the SQL tables (``impact``, ``who``) know ``name`` is a ref
    from its first call-graph row on, never a repository of its own."""
    from ..models import KIND_GIT_REF

    with sessions.begin() as s:
        row = s.get(IndexState, name)
        if row is None:
            s.add(IndexState(name=name, kind=KIND_GIT_REF, commit="", last_mode=""))
        elif row.kind != KIND_GIT_REF:
            row.kind = KIND_GIT_REF


def ref_sources(sessions: sessionmaker) -> dict[str, str]:
    """``{name: commit}`` of every ref source (state rows of kind ``git-ref``; the commit
    is ``""`` before its first run succeeded)."""
    from ..models import KIND_GIT_REF

    with sessions() as s:
        return {r.name: r.commit or "" for r in s.execute(select(IndexState).where(IndexState.kind == KIND_GIT_REF))
                .scalars()}


def ref_problems(sessions: sessionmaker) -> dict[str, str]:
    """``{name: error}`` of the ref sources whose last run failed or could not index the
    ref (a tag of a tree, a ref gone from the repository): the line ``coderag status``
    shows for them."""
    from ..models import KIND_GIT_REF

    with sessions() as s:
        return {r.name: r.last_error for r in s.execute(
            select(IndexState).where(IndexState.kind == KIND_GIT_REF, IndexState.last_error.is_not(None),
                                     IndexState.last_error != "")).scalars()}
