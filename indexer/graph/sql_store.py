"""The call graph in SQL (tables in :mod:`indexer.graph.sql_models`).

Rows belong to files: ``replace_files`` swaps exactly the given files' facts,
definitions and outgoing edges, then re-resolves the edges of the other files whose
calls could have pointed into them, all in one transaction (a crash leaves the previous
graph). ``load_graph`` rebuilds a :class:`CallGraph` from the stored rows.
"""
from __future__ import annotations

import gc
import json
import logging
import threading
from datetime import datetime, timezone
from typing import Iterable

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session, sessionmaker

from .sql_models import CodeDefinition, CodeEdge, CodeFile
from .facts import FileFacts
from .query import CallGraph, is_test_path
from .resolve import RULE_DYNAMIC, RULE_EXTERNAL, RULE_RECEIVER_UNKNOWN, Edge, Resolver, resolve

INSERT_BATCH = 5000
# Definition rows read to decide whether a name is defined once (graph_neighbours); a
# name's rows are distinct (path, symbol) pairs except for overloads, so 2 distinct among
# the first 16 is certain in practice.
_SAME_NAME_PROBE = 16

log = logging.getLogger(__name__)


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
    """Every stored :class:`FileFacts` of ``repo``. A row that does not decode (a damaged
    ``facts_json``) is skipped with one warning, so one bad row never takes ``impact``
    or ``doctor`` down; ``doctor`` reports it and a re-index rewrites it."""
    out = []
    # Decoding builds tens of thousands of small objects and none is garbage: the cyclic
    # collector would walk them again and again (about half the load time), so it waits.
    paused = gc.isenabled()
    gc.disable()
    try:
        for path, raw in session.execute(select(CodeFile.path, CodeFile.facts_json).where(CodeFile.repo == repo)):
            try:
                out.append(FileFacts.from_dict(json.loads(raw)))
            except (TypeError, ValueError, KeyError, AttributeError) as exc:
                log.warning("call graph of %s: skipping the damaged row of %s (%s)", repo, path, type(exc).__name__)
    finally:
        if paused:
            gc.enable()
    return out


class _FactsCache:
    """Process-wide ``{path: FileFacts}`` per repo, valid for one :func:`graph_version`.
    Decoding every file's facts JSON costs seconds on a large repo; incremental updates
    (:func:`replace_files`) patch the cached dict instead of reloading it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._facts: dict[str, tuple[tuple, dict[str, FileFacts]]] = {}

    def get(self, session: Session, repo: str, version: tuple | None = None) -> dict[str, FileFacts]:
        """A private copy of ``repo``'s facts as stored now (loaded on a version miss)."""
        version = version or graph_version(session, repo)
        with self._lock:
            hit = self._facts.get(repo)
            if hit and hit[0] == version:
                return dict(hit[1])
        facts = {f.path: f for f in load_facts(session, repo)}
        self.put(repo, version, facts)
        return dict(facts)

    def put(self, repo: str, version: tuple, facts: dict[str, FileFacts]) -> None:
        with self._lock:
            self._facts[repo] = (version, dict(facts))

    def invalidate(self, repo: str) -> None:
        with self._lock:
            self._facts.pop(repo, None)


_FACTS = _FactsCache()


def _remember_facts(sessions: sessionmaker, repo: str, facts: dict[str, FileFacts]) -> None:
    with sessions() as s:
        _FACTS.put(repo, graph_version(s, repo), facts)


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
    _remember_facts(sessions, repo, {f.path: f for f in facts})
    return len(edges)


def replace_files(sessions: sessionmaker, repo: str, commit: str,
                  changed: dict[str, FileFacts | None]) -> int:
    """Incremental update: ``changed`` maps each touched path to its new facts, or to
    ``None`` when the file was deleted (or is no longer parseable).

    The touched files' rows are replaced. Edges of untouched files are re-resolved only
    when they could be affected: they called into a touched file, or they call a name
    that a touched file defines (before or after) — which is also the only way an
    unresolved call elsewhere can become resolvable. Only those callers' calls are
    resolved (against the whole repo's facts, kept decoded in a process cache), so a
    one-file push on a large repo costs a fraction of a full resolution. Returns the
    number of edge rows written.
    """
    now = datetime.now(timezone.utc)
    with sessions.begin() as s:
        facts_by_path = _FACTS.get(s, repo)  # the state before this change
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
            (CodeEdge.callee_path.in_(list(changed))) | (CodeEdge.callee_name.in_(list(names))))).scalars())
        for path in changed:
            facts_by_path.pop(path, None)
        facts_by_path.update({f.path: f for f in new})
        redo = affected | {f.path for f in new}
        s.execute(delete(CodeEdge).where(CodeEdge.repo == repo, CodeEdge.caller_path.in_(list(redo))))
        resolver = Resolver(list(facts_by_path.values()))
        edges = [e for path in sorted(redo) if path in resolver.files
                 for call in resolver.files[path].calls for e in resolver.edges_for(path, call)]
        rows = _edge_rows(repo, edges)
        _rows_in_batches(s, CodeEdge, rows)
        s.execute(CodeFile.__table__.update().where(CodeFile.repo == repo).values(commit=commit))
    _CACHE.invalidate(repo)
    _remember_facts(sessions, repo, facts_by_path)
    return len(rows)


def load_edges(session: Session, repo: str) -> list[Edge]:
    """Every stored edge of ``repo`` (plain column tuples: no ORM objects for 100k+ rows)."""
    rows = session.execute(select(CodeEdge.caller_path, CodeEdge.caller_symbol, CodeEdge.line,
                                  CodeEdge.callee_path, CodeEdge.callee_symbol, CodeEdge.callee_name,
                                  CodeEdge.resolved, CodeEdge.rule).where(CodeEdge.repo == repo))
    return [Edge(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]), r[7]) for r in rows]


def graph_neighbours(sessions: sessionmaker, repo: str, path: str, symbol: str, *,
                     callers: bool = False) -> list[tuple[str, str, int, str]]:
    """Direct neighbours of the definition ``(path, symbol)`` straight from SQL:
    ``[(path, symbol, line, kind)]`` with ``kind`` ``"callee"`` (resolved callees that are
    not in test files, first call first; ``line`` is the call line in ``path``) then, when
    ``callers`` is set, ``"caller"`` (direct callers sorted by path and symbol, ``line``
    is the first call line in the caller). Callers follow :meth:`CallGraph.callers` at
    depth 1 with ``include_unresolved="unique"``: unresolved same-name calls count only
    when exactly one definition in the repo has that name; recursion is not a caller.

    Every query is a plain equality lookup that matches one index exactly
    (``ix_code_edges_caller_symbol`` for callees, ``ix_code_edges_callee`` and
    ``ix_code_edges_callee_name`` for callers, ``ix_code_definitions_repo_symbol`` and
    ``_repo_name`` for the name); grouping, de-duplication and sorting are done here on the
    few rows returned. With a GROUP BY or DISTINCT in SQL, SQLite's planner (no
    statistics) chose an index that matched the grouping on ``repo`` alone and scanned
    the repo's whole graph: ~0.6 s per seed on sqlalchemy's 205k edges. So the cost does
    not grow with the graph (bench/search_bench.py, stage ``expand``), and retrieval
    expansion never loads the whole graph (a push does not make the read side reload
    100k+ edges before it can answer).
    """
    out: list[tuple[str, str, int, str]] = []
    with sessions() as s:
        called: dict[tuple[str, str], int] = {}
        for p, sym, line in s.execute(select(CodeEdge.callee_path, CodeEdge.callee_symbol, CodeEdge.line).where(
                CodeEdge.repo == repo, CodeEdge.caller_path == path, CodeEdge.caller_symbol == symbol,
                CodeEdge.resolved.is_(True))):
            if line < called.get((p, sym), line + 1):
                called[(p, sym)] = line
        out += [(p, sym, line, "callee") for (p, sym), line in sorted(called.items(), key=lambda kv: (kv[1], kv[0]))
                if (p, sym) != (path, symbol) and not is_test_path(p)]
        if not callers:
            return out
        name = s.execute(select(CodeDefinition.name).where(
            CodeDefinition.repo == repo, CodeDefinition.path == path,
            CodeDefinition.symbol == symbol).limit(1)).scalar()
        if name is None:
            return out
        first: dict[tuple[str, str], int] = {}
        edges = select(CodeEdge.caller_path, CodeEdge.caller_symbol, CodeEdge.line)
        # Two index lookups instead of one OR (which SQLite may plan as a scan of the repo).
        queries = [edges.where(CodeEdge.repo == repo, CodeEdge.callee_path == path,
                               CodeEdge.callee_symbol == symbol, CodeEdge.resolved.is_(True))]
        # Is ``name`` defined exactly once? A few rows suffice (a second distinct one ends it).
        same_name = set(s.execute(select(CodeDefinition.path, CodeDefinition.symbol).where(
            CodeDefinition.repo == repo, CodeDefinition.name == name).limit(_SAME_NAME_PROBE)).all())
        if len(same_name) == 1:
            queries.append(edges.where(
                CodeEdge.repo == repo, CodeEdge.callee_name == name, CodeEdge.resolved.is_(False),
                CodeEdge.rule.not_in([RULE_EXTERNAL, RULE_DYNAMIC, RULE_RECEIVER_UNKNOWN])))
        for q in queries:
            for cp, cs, line in s.execute(q):
                if (cp, cs) != (path, symbol) and line < first.get((cp, cs), line + 1):
                    first[(cp, cs)] = line
    out += [(p, sym, line, "caller") for (p, sym), line in sorted(first.items())]
    return out


def graph_links(sessions: sessionmaker, repo: str,
                definitions: Iterable[tuple[str, str]]) -> list[tuple[str, str, str, str]]:
    """Resolved call edges *among* the given definitions of ``repo``:
    ``[(caller_path, caller_symbol, callee_path, callee_symbol)]``, each pair once,
    self-calls left out. ``definitions``: ``(path, symbol)`` pairs (a ranking stage's
    candidates, a few dozen). One indexed query (``ix_code_edges_caller_symbol`` with an
    IN per column: ``caller_path IN (...) AND caller_symbol IN (...)``, which SQLite plans as
    index probes on all three columns; a row-value ``IN`` was planned as a search on
    ``repo`` alone, a scan of the repo's edges, ~85 ms p50 on sqlalchemy's 205k edges);
    the exact pairs and the callee side are filtered here, so the cost is the candidates'
    outgoing edges, not the graph's size."""
    wanted = {(p, s) for p, s in definitions if p and s}
    if not wanted:
        return []
    out: set[tuple[str, str, str, str]] = set()
    with sessions() as s:
        rows = s.execute(select(CodeEdge.caller_path, CodeEdge.caller_symbol, CodeEdge.callee_path,
                                CodeEdge.callee_symbol).where(
            CodeEdge.repo == repo, CodeEdge.caller_path.in_(sorted({p for p, _ in wanted})),
            CodeEdge.caller_symbol.in_(sorted({sym for _, sym in wanted})), CodeEdge.resolved.is_(True)))
        for cp, cs, ep, es in rows:
            if (cp, cs) in wanted and (ep, es) in wanted and (ep, es) != (cp, cs):
                out.add((cp, cs, ep, es))
    return sorted(out)


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
            graph = CallGraph(list(_FACTS.get(s, repo, version).values()), load_edges(s, repo))
        with self._lock:
            self._graphs[repo] = (version, graph)
        return graph


_CACHE = _GraphCache()


def load_graph(sessions: sessionmaker, repo: str) -> CallGraph | None:
    """The :class:`CallGraph` of ``repo`` (cached until the repo is re-indexed), or ``None``.
    Loading costs seconds on a repo with 100k+ edges (``impact`` pays it once per
    change); retrieval expansion uses :func:`graph_neighbours` instead."""
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
    _FACTS.invalidate(repo)
