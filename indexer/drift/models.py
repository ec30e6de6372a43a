"""SQL tables of runbook <-> code drift (migration ``0006_drift_experts``).

* ``knowledge_repos``: one row per indexed git repo as drift and ``who`` see it: the
  work tree (or mirror) ``root`` and the indexed ``commit`` whose code references are
  resolved against and whose history is read; ``history_commit`` is the newest commit
  whose authorship is already in ``expert_changes`` (incremental updates start there);
  ``drift_commit`` the one whose history dated the missing references (a push scans
  only the commits after it for references already known to be missing).
* ``doc_refs``: one row per code reference extracted from a doc (a repo's Markdown/RST
  file or a Confluence page), with its resolution (``ok``/``stale``/``unknown``) and
  evidence. Rows of one doc are replaced together when the doc changes.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from common.db import Base


class KnowledgeRepo(Base):
    """A repo whose code docs are checked against and whose history ``who`` reads."""

    __tablename__ = "knowledge_repos"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    root: Mapped[str] = mapped_column(String(2000), nullable=False)
    commit: Mapped[str] = mapped_column(String(64), nullable=False)
    history_commit: Mapped[str] = mapped_column(String(64), nullable=False, default="")
    drift_commit: Mapped[str] = mapped_column(String(64), nullable=False, default="")
    refreshed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class DocRef(Base):
    """One code reference of a doc section.

    ``source``: the doc's source (repo name or Confluence space key); ``doc``: its path in
    the index (``docs/runbook.md``, ``confluence/OPS/123-title``); ``section``: heading
    path; ``line``: 1-based line in the doc; ``kind``: flag, env, config, endpoint,
    metric, symbol, path, target; ``ref``: the text as written; ``key``: what is looked up
    (:class:`indexer.drift.extract.Reference`); ``external``: never stale; ``context``: why
    (``history``: a version or deprecation note, ``example``: the doc's own example, "");
    ``status``: ok, stale or
    unknown; ``evidence``: ``path:line@sha`` (ok), ``repo``: where it was found or
    judged; ``removed_commit``/``removed_at``/``removed_summary``: the commit that removed
    it (stale); ``new_name``/``new_evidence``: the likely new name when the removal was
    a rename; ``note``: a one-line reason.
    """

    __tablename__ = "doc_refs"
    __table_args__ = (
        Index("ix_doc_refs_source_doc", "source", "doc"),
        Index("ix_doc_refs_status", "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source: Mapped[str] = mapped_column(String(200), nullable=False)
    doc: Mapped[str] = mapped_column(String(1000), nullable=False)
    title: Mapped[str] = mapped_column(String(500), nullable=False, default="")
    url: Mapped[str] = mapped_column(String(2000), nullable=False, default="")
    section: Mapped[str] = mapped_column(String(1000), nullable=False, default="")
    section_start: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    section_end: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    line: Mapped[int] = mapped_column(Integer, nullable=False)
    kind: Mapped[str] = mapped_column(String(20), nullable=False)
    ref: Mapped[str] = mapped_column(String(500), nullable=False)
    key: Mapped[str] = mapped_column(String(500), nullable=False)
    external: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    context: Mapped[str] = mapped_column(String(20), nullable=False, default="", server_default="")
    status: Mapped[str] = mapped_column(String(10), nullable=False, default="unknown")
    repo: Mapped[str] = mapped_column(String(200), nullable=False, default="")
    evidence: Mapped[str] = mapped_column(String(1200), nullable=False, default="")
    removed_commit: Mapped[str] = mapped_column(String(64), nullable=False, default="")
    removed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    removed_summary: Mapped[str] = mapped_column(String(500), nullable=False, default="")
    new_name: Mapped[str] = mapped_column(String(500), nullable=False, default="")
    new_evidence: Mapped[str] = mapped_column(String(1200), nullable=False, default="")
    note: Mapped[str] = mapped_column(Text, nullable=False, default="")
    checked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
