"""Call-graph tables. Every row belongs to one file of one repo (``repo``, ``path``), so
re-indexing a file replaces exactly its facts, definitions and outgoing edges."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from common.db import Base


class CodeFile(Base):
    """One source file's extracted graph facts (JSON of ``indexer.graph.facts.FileFacts``)."""

    __tablename__ = "code_files"
    __table_args__ = (UniqueConstraint("repo", "path", name="uq_code_files_repo_path"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo: Mapped[str] = mapped_column(String(200), nullable=False)
    path: Mapped[str] = mapped_column(String(1000), nullable=False)
    language: Mapped[str] = mapped_column(String(40), nullable=False)
    commit: Mapped[str] = mapped_column(String(64), nullable=False)
    facts_json: Mapped[str] = mapped_column(Text, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class CodeDefinition(Base):
    """A function, method or class definition; lines are 1-based and inclusive."""

    __tablename__ = "code_definitions"
    __table_args__ = (
        Index("ix_code_definitions_repo_name", "repo", "name"),
        Index("ix_code_definitions_repo_symbol", "repo", "symbol"),
        Index("ix_code_definitions_repo_path", "repo", "path"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo: Mapped[str] = mapped_column(String(200), nullable=False)
    path: Mapped[str] = mapped_column(String(1000), nullable=False)
    symbol: Mapped[str] = mapped_column(String(500), nullable=False)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    kind: Mapped[str] = mapped_column(String(40), nullable=False)
    start_line: Mapped[int] = mapped_column(Integer, nullable=False)
    end_line: Mapped[int] = mapped_column(Integer, nullable=False)


class CodeEdge(Base):
    """A call site: caller (file, symbol, line) -> callee. ``resolved`` is False when the
    callee could only be named (``callee_name``), not located; ``rule`` says how it was
    resolved (same_file, import, self_method, typed_receiver, ...)."""

    __tablename__ = "code_edges"
    __table_args__ = (
        Index("ix_code_edges_callee", "repo", "callee_path", "callee_symbol"),
        Index("ix_code_edges_callee_name", "repo", "callee_name"),
        Index("ix_code_edges_caller_symbol", "repo", "caller_path", "caller_symbol"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo: Mapped[str] = mapped_column(String(200), nullable=False)
    caller_path: Mapped[str] = mapped_column(String(1000), nullable=False)
    caller_symbol: Mapped[str] = mapped_column(String(500), nullable=False)
    line: Mapped[int] = mapped_column(Integer, nullable=False)
    callee_path: Mapped[str] = mapped_column(String(1000), nullable=False, default="")
    callee_symbol: Mapped[str] = mapped_column(String(500), nullable=False, default="")
    callee_name: Mapped[str] = mapped_column(String(200), nullable=False)
    resolved: Mapped[bool] = mapped_column(Boolean, nullable=False)
    rule: Mapped[str] = mapped_column(String(40), nullable=False)
