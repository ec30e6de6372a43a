"""SQL table of "who knows this" (migration ``0006_drift_experts``).

``expert_changes``: one row per (commit, file) of a repo's history, for the commits
``who`` counts: merges are left out, bot and mass-change/reformatting commits are
marked ``excluded`` (:mod:`indexer.experts.history`). Authors are already merged
through the repo's ``.mailmap`` (``author_email`` is lower-cased, ``%aE``).
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from common.db import Base


class ExpertChange(Base):
    """Lines one author changed in one file in one commit (``lines`` = added + deleted).

    ``excluded``: ``""`` for a counted change; ``bot``, ``reformat`` (subject says so, or
    listed in ``.git-blame-ignore-revs``) or ``mass`` (too many files) for a commit that
    does not count, stored once with ``path=""`` so ``git blame`` can ignore it."""

    __tablename__ = "expert_changes"
    __table_args__ = (
        Index("ix_expert_changes_repo_path", "repo", "path"),
        Index("ix_expert_changes_repo_commit", "repo", "commit"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo: Mapped[str] = mapped_column(String(200), nullable=False)
    path: Mapped[str] = mapped_column(String(1000), nullable=False)
    commit: Mapped[str] = mapped_column(String(64), nullable=False)
    author_name: Mapped[str] = mapped_column(String(300), nullable=False)
    author_email: Mapped[str] = mapped_column(String(300), nullable=False)
    committed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    lines: Mapped[int] = mapped_column(Integer, nullable=False)
    excluded: Mapped[str] = mapped_column(String(20), nullable=False, default="")
