"""The call graph in SQL (tables in :mod:`indexer.db.models`).

Rows belong to files: ``replace_files`` swaps exactly the given files' facts,
definitions and outgoing edges, then re-resolves the edges of the other files whose
calls could have pointed into them, all in one transaction (a crash leaves the previous
graph). ``load_graph`` rebuilds a :class:`CallGraph` from the stored rows.
"""
from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from typing import Iterable

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session, sessionmaker

from ..db.models import CodeDefinition, CodeEdge, CodeFile
from .facts import FileFacts
from .query import CallGraph
from .resolve import Edge, resolve

INSERT_BATCH = 5000


def _rows_in_batches(session: Session, table, rows: list[dict]) -> None:
    for i in range(0, len(rows), INSERT_BATCH):
        session.execute(insert(table), rows[i:i + INSERT_BATCH])


def _definition_rows(repo: str, facts: FileFacts) -> list[dict]:
    return [{"repo": repo, "path": facts.path, "symbol": d.symbol, "name": d.name, "kind": d.kind,
             "start_line": d.start_line, "end_line": d.end_line} for d in facts.definitions]


def _edge_rows(repo: str, edges: Iterable[Edge]) -> list[dict]:
    return [{"repo": repo, "caller_path": e.caller_path, "caller_symbol": e.caller_symbol,
             "line": e.line, "callee_path": e.callee_path or "", "callee_symbol": e.callee_symbol or "",
             "callee_name": e.callee_name, "resolved": bool(e.resolved), "rule": e.rule} for e in edges]


def load_facts(session: Session, repo: str) -> list[FileFacts]:
    """Every stored :class:`FileFacts` of ``repo``."""
    rows = session.execute(select(CodeFile.facts_json).where(CodeFile.repo == repo)).scalars()
    return [FileFacts.from_dict(json.loads(r)) for r in rows]


def save_repo_graph(sessions: sessionmaker, repo: str, commit: str, facts: list[FileFacts]) -> int:
    """Replace ``repo``'s whole graph with ``facts`` (resolved here); returns the edge count."""
    edges = resolve(facts)
    now = datetime.now(timezone.utc)
    with sessions.begin() as s:
        for table in (CodeEdge, CodeDefinition, CodeFile):
            s.execute(delete(table).where(table.repo == repo))
        _rows_in_batches(s, CodeFile, [{"repo": repo, "path": f.path, "language": f.language,
                                        "commit": commit, "facts_json": json.dumps(f.to_dict()),
                                        "updated_at": now} for f in facts])
        _rows_in_batches(s, CodeDefinition, [r for f in facts for r in _definition_rows(repo, f)])
        _rows_in_batches(s, CodeEdge, _edge_rows(repo, edges))
    _CACHE.invalidate(repo)
    return len(edges)


def replace_files(sessions: sessionmaker, repo: str, commit: str,
                  changed: dict[str, FileFacts | None]) -> int:
    """Incremental update: ``changed`` maps each touched path to its new facts, or to
    ``None`` when the file was deleted (or is no longer parseable).

    The touched files' rows are replaced. Edges of untouched files are re-resolved only
    when they could be affected: they called into a touched file, or they call a name
    that a touched file defines (before or after), or they are unresolved. Returns the
    number of edge rows written.
    """
    now = datetime.now(timezone.utc)
    with sessions.begin() as s:
        old_names = set(s.execute(select(CodeDefinition.name).where(
            CodeDefinition.repo == repo, CodeDefinition.path.in_(list(changed)))).scalars())
        for table, col in ((CodeEdge, CodeEdge.caller_path), (CodeDefinition, CodeDefinition.path),
                           (CodeFile, CodeFile.path)):
            s.execute(delete(table).where(table.repo == repo, col.in_(list(changed))))
        new = [f for f in changed.values() if f is not None]
        _rows_in_batches(s, CodeFile, [{"repo": repo, "path": f.path, "language": f.language,
                                        "commit": commit, "facts_json": json.dumps(f.to_dict()),
                                        "updated_at": now} for f in new])
        _rows_in_batches(s, CodeDefinition, [r for f in new for r in _definition_rows(repo, f)])
        names = old_names | {d.name for f in new for d in f.definitions}
        affected = set(s.execute(select(CodeEdge.caller_path).where(
            CodeEdge.repo == repo,
            (CodeEdge.callee_path.in_(list(changed))) | (CodeEdge.callee_name.in_(list(names)))
            | (CodeEdge.resolved.is_(False)))).scalars())
        all_facts = load_facts(s, repo)
        redo = affected | {f.path for f in new}
        s.execute(delete(CodeEdge).where(CodeEdge.repo == repo, CodeEdge.caller_path.in_(list(redo))))
        edges = [e for e in resolve(all_facts) if e.caller_path in redo]
        rows = _edge_rows(repo, edges)
        _rows_in_batches(s, CodeEdge, rows)
        s.execute(CodeFile.__table__.update().where(CodeFile.repo == repo).values(commit=commit))
    _CACHE.invalidate(repo)
    return len(rows)


def load_edges(session: Session, repo: str) -> list[Edge]:
    rows = session.execute(select(CodeEdge).where(CodeEdge.repo == repo)).scalars()
    return [Edge(r.caller_path, r.caller_symbol, r.line, r.callee_path, r.callee_symbol,
                 r.callee_name, r.resolved, r.rule) for r in rows]


def graph_version(session: Session, repo: str) -> tuple:
    """Changes whenever the repo's graph is rewritten (for caching)."""
    return tuple(session.execute(select(func.count(CodeFile.id), func.max(CodeFile.updated_at))
                                 .where(CodeFile.repo == repo)).one())


def indexed_repos(sessions: sessionmaker) -> list[str]:
    """Repos that have a stored graph."""
    with sessions() as s:
        return sorted(set(s.execute(select(CodeFile.repo).distinct()).scalars()))


class _GraphCache:
    """Process-wide cache of loaded graphs keyed by repo and :func:`graph_version`."""

    def __init__(self):
        self._lock = threading.Lock()
        self._graphs: dict[str, tuple[tuple, CallGraph]] = {}

    def invalidate(self, repo: str) -> None:
        with self._lock:
            self._graphs.pop(repo, None)

    def get(self, sessions: sessionmaker, repo: str) -> CallGraph | None:
        with sessions() as s:
            version = graph_version(s, repo)
            if not version[0]:
                return None
            with self._lock:
                hit = self._graphs.get(repo)
                if hit and hit[0] == version:
                    return hit[1]
            graph = CallGraph(load_facts(s, repo), load_edges(s, repo))
        with self._lock:
            self._graphs[repo] = (version, graph)
        return graph


_CACHE = _GraphCache()


def load_graph(sessions: sessionmaker, repo: str) -> CallGraph | None:
    """The :class:`CallGraph` of ``repo`` (cached until the repo is re-indexed), or ``None``."""
    return _CACHE.get(sessions, repo)


def repo_commit(sessions: sessionmaker, repo: str) -> str:
    """Commit the stored graph of ``repo`` was built from ("" if none)."""
    with sessions() as s:
        return s.execute(select(func.max(CodeFile.commit)).where(CodeFile.repo == repo)).scalar() or ""


def delete_repo_graph(sessions: sessionmaker, repo: str) -> None:
    """Remove every graph row of ``repo`` (files, definitions, edges)."""
    with sessions.begin() as s:
        for table in (CodeEdge, CodeDefinition, CodeFile):
            s.execute(delete(table).where(table.repo == repo))
    _CACHE.invalidate(repo)
