"""Drift counts per source, for ``coderag status``: one grouped query, nothing else to
load (the code index, tree-sitter and the resolver stay unimported)."""
from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import sessionmaker

from .models import DocRef


def drift_counts(sessions: sessionmaker) -> dict[str, dict[str, int]]:
    """``{source: {"ok": n, "stale": n, "unknown": n}}`` (for ``coderag status``)."""
    with sessions() as s:
        rows = s.execute(select(DocRef.source, DocRef.status, func.count()).group_by(DocRef.source, DocRef.status)).all()
    out: dict[str, dict[str, int]] = {}
    for src, status, n in rows:
        out.setdefault(src, {"ok": 0, "stale": 0, "unknown": 0})[status] = n
    return out
