"""``coderag doctor``: check (and with ``repair`` fix) every source's index versions.

One scan of the chunk collection (ids, ``repo``, ``run_gen``, ``path``; cursor paging,
no vectors) gives, per source: objects per run generation, the visible ones (the rules
of :func:`indexer.store.versions.source_filter`, applied in Python and cross-checked
with a Weaviate count of the same filter), orphan runs (generations above the committed
one, or objects of a source without a record), superseded objects still waiting for
their clean-up. Then the visible objects' vectors are checked
(:func:`~indexer.store.versions.missing_vectors`), and with a SQL database the call
graph's definitions are matched to the visible chunks by path.

Problems and their repair:

* ``orphans`` (runs that never committed, sources without a record): deleted;
* ``pending`` (superseded objects a crash left behind): deleted (the record hides them);
* chunks without a vector on purpose are *states*, not problems: ``keyword_only``
  (``vector_state="none"``, the embedding policy's keyword-only roles) and
  ``vectors_pending`` (``vector_state="pending"``: a first index committed them
  keyword-ready and fills in their vectors; reported as "vectors N% done"). Only a
  mismatch with the record is a problem (``vector_state_mismatch``: the record says the
  vectors are complete but objects still wait for one, or another count): repaired by
  giving those objects their vector (stored, by content hash, or embedded afresh);
* ``missing_vectors`` (visible objects meant to have a vector that are not in the vector
  index): deleted and re-inserted
  with their stored vector, or the vector of a chunk with the same content hash, or a
  fresh embedding of the stored text;
* ``graph_orphans`` (files with call-graph definitions but no visible chunk): their rows
  are removed from the graph (:func:`indexer.graph.sql_store.replace_files`);
* ``code_file_orphans`` (``code_files`` rows, the graph's one row per indexed file, that
  belong to no source record, are of another commit than the committed one, or are of a
  file with no visible chunk; an empty file, e.g. a bare ``__init__.py``, has nothing to
  chunk and no facts, and is not counted): removed with the file's definitions and edges
  (``replace_files``; the whole repo's graph when its source record is gone);
* ``record_mismatch`` (the record's chunk count differs from the visible count): the
  record is rewritten with the visible count.

A named ref (kind ``git-ref``, :mod:`indexer.sources.refs`) is checked like any source,
except that its call graph holds every file of its commit while its chunks are only the
files that differ from its base: rows of its files without a chunk are expected, rows of
another commit are not. It is repaired under its base repository's index lock (the lock
its runs take), and re-indexed at its recorded commit against its base.
"""
from __future__ import annotations

import logging
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, replace
from typing import Callable

from common.settings import Settings

from ..models import vectors_percent
from . import versions

log = logging.getLogger(__name__)

PROBLEM_FIELDS = ("orphans", "pending", "missing_vectors", "vector_state_mismatch", "graph_orphans",
                  "code_file_orphans", "record_mismatch")


@dataclass
class SourceHealth:
    """What ``doctor`` found for one source (counts are objects unless said otherwise).

    ``runs``: generation -> objects (``"legacy"`` for objects written before versioning);
    ``committed_gen``/``floor``: the committed version (0 = none / pre-versioning);
    ``orphan_runs``: generations of orphan objects; ``graph_orphans``: files (paths);
    ``code_file_orphans``: ``code_files`` rows (paths in ``code_file_orphan_paths``, each
    with its reason in ``code_file_orphan_reasons``: ``no source``, ``commit`` or
    ``no chunks``)."""

    name: str
    kind: str = ""
    has_record: bool = True
    committed_gen: int = 0
    floor: int = 0
    record_chunks: int = 0
    visible: int = 0
    visible_by_filter: int = 0
    runs: dict = field(default_factory=dict)
    orphans: int = 0
    orphan_runs: list = field(default_factory=list)
    pending: int = 0
    missing_vectors: int = 0
    keyword_only: int = 0
    vectors_pending: int = 0
    vectors_percent: int | None = None
    vector_state_mismatch: int = 0
    graph_orphans: int = 0
    graph_orphan_paths: list = field(default_factory=list)
    code_file_orphans: int = 0
    code_file_orphan_paths: list = field(default_factory=list)
    code_file_orphan_reasons: dict = field(default_factory=dict)
    record_mismatch: int = 0
    problems: list = field(default_factory=list)
    repaired: list = field(default_factory=list)
    _missing_ids: list = field(default_factory=list, repr=False)
    _stuck_ids: list = field(default_factory=list, repr=False)
    damaged: str = ""
    _newest_paths: list = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("_missing_ids", None)
        d.pop("_stuck_ids", None)
        d["runs"] = {str(k): v for k, v in self.runs.items()}
        d["ok"] = self.ok
        return d


def _visible(gen_obj, path: str, gen: int, floor: int, replaced: set) -> bool:
    if floor >= 1:
        if gen_obj is None or not floor <= gen_obj <= gen:
            return False
    elif gen_obj is not None and gen_obj > gen:
        return False
    if replaced and path in replaced and gen_obj != gen:
        return False
    return True


#: ``CODERAG_INDEX_LOCK_TTL_SECONDS``'s declared default (seconds).
DEFAULT_LOCK_TTL: float = Settings.model_fields["index_lock_ttl"].default


def check_index(store, sessions=None, *, lock_ttl: float = DEFAULT_LOCK_TTL) -> list[SourceHealth]:
    """Check every source (records and objects) of ``store``; returns one
    :class:`SourceHealth` per source name, sorted. ``sessions``: the SQL database for
    the call-graph check (skipped when ``None``); ``lock_ttl``: the caller's
    ``CODERAG_INDEX_LOCK_TTL_SECONDS`` (an index run whose lock heartbeat is newer is
    still active). Raises ``WeaviateUnavailable``."""
    records = {r.name: r for r in store.sources.all()}
    objects: dict[str, list[tuple[str, int | None, str]]] = defaultdict(list)
    vstate: dict[str, str] = {}  # id -> "none" / "pending" (objects without a vector on purpose)
    for obj in store.query.all_objects(["repo", "run_gen", "path", "vector_state"]):
        p = obj.properties
        gen = p.get("run_gen")
        objects[p.get("repo") or ""].append((obj.uuid, None if gen is None else int(gen), p.get("path") or ""))
        if p.get("vector_state"):
            vstate[obj.uuid] = p["vector_state"]
    code_files = _code_files(sessions) if sessions is not None else {}
    out = []
    for name in sorted(set(records) | set(objects) | set(code_files)):
        rec = records.get(name)
        h = SourceHealth(name=name, kind=rec.kind if rec is not None else "" if objects.get(name) else "git",
                         has_record=rec is not None)
        objs = objects.get(name, [])
        h.runs = dict(sorted(Counter("legacy" if g is None else g for _u, g, _p in objs).items(), key=str))
        if rec is None:
            h.orphans = len(objs)
            h.orphan_runs = sorted({str(g) for _u, g, _p in objs})
            if objs:
                h.problems.append(f"{len(objs)} objects without a source record (a first run that never committed)")
            rows = code_files.get(name, [])
            if rows:
                h.code_file_orphan_paths = sorted(path for path, _c, _e, _d in rows)
                h.code_file_orphan_reasons = {path: "no source" for path in h.code_file_orphan_paths}
                h.code_file_orphans = len(rows)
                h.problems.append(f"{len(rows)} call-graph file rows (code_files) without a source record")
            out.append(h)
            continue
        gen, floor, replaced = versions.record_state(rec)
        replaced = set(replaced)
        if rec.damaged:
            h.damaged = rec.damaged
            h._newest_paths = sorted({p for _u, g, p in objs if g == gen})
            h.problems.append(f"the source record is damaged ({h.damaged}); `coderag doctor --repair` rewrites it")
            if "replaced_json" in h.damaged and gen >= 1:
                floor = gen  # what readers see meanwhile: the newest generation only
        h.committed_gen, h.floor, h.record_chunks = gen, floor, int(rec.chunks or 0)
        visible_ids = []
        orphan_gens = set()
        for uid, g, path in objs:
            if _visible(g, path, gen, floor, replaced):
                visible_ids.append(uid)
            elif g is not None and g > gen:
                h.orphans += 1
                orphan_gens.add(g)
            else:
                h.pending += 1
        h.orphan_runs = sorted(orphan_gens)
        h.visible = len(visible_ids)
        h.visible_by_filter = store.query.count_where(versions.source_filter(rec))
        if h.orphans:
            h.problems.append(f"{h.orphans} objects of uncommitted runs {h.orphan_runs}")
        if h.pending:
            h.problems.append(f"{h.pending} superseded objects not yet deleted")
        if h.visible_by_filter != h.visible:
            h.problems.append(f"the read filter sees {h.visible_by_filter} objects, the scan {h.visible}")
        pending_ids = [u for u in visible_ids if vstate.get(u) == "pending"]
        h.vectors_pending = len(pending_ids)
        h.keyword_only = sum(1 for u in visible_ids if vstate.get(u) == "none")
        rec_pending = int(rec.vectors_pending or 0)
        if h.vectors_pending and not rec_pending:
            # The record says complete (phase 2 finished or was never due): these are damage.
            h.vector_state_mismatch = h.vectors_pending
            h._stuck_ids = pending_ids
            h.problems.append(f"{h.vectors_pending} searchable objects still wait for a vector but the source "
                              "record says the vectors are complete")
        elif h.vectors_pending:
            h.vectors_percent = vectors_percent({"chunks": h.visible, "keyword_only": h.keyword_only,
                                                 "vectors_pending": h.vectors_pending})
            if sessions is not None and not _run_active(sessions, rec.base or name, lock_ttl):
                # a first index stopped (killed, crashed) after its keyword-ready commit:
                # nobody fills these vectors any more, so "N% done" would stay forever
                h._stuck_ids = pending_ids
                h.problems.append(f"a first index stopped before its vectors were done ({h.vectors_percent}% "
                                  f"done, {h.vectors_pending} waiting, no run is filling them)")
        meant = [u for u in visible_ids if u not in vstate]
        h._missing_ids = store.runs.missing_vectors(meant, int(rec.dimensions or 0))
        h.missing_vectors = len(h._missing_ids)
        if h.missing_vectors:
            h.problems.append(f"{h.missing_vectors} searchable objects have no vector in the vector index")
        if h.record_chunks != h.visible:
            h.record_mismatch = abs(h.record_chunks - h.visible)
            h.problems.append(f"the source record says {h.record_chunks} chunks, {h.visible} are searchable")
        whole_graph = bool(rec.base)  # a named ref: its graph has every file, its chunks only the differing
        if sessions is not None and (rec.kind or "git") in ("git", "git-ref"):
            paths = {p for uid, g, p in objs if _visible(g, p, gen, floor, replaced)}
            h.graph_orphan_paths = [] if whole_graph else sorted(set(_graph_paths(sessions, name)) - paths)
            h.graph_orphans = len(h.graph_orphan_paths)
            if h.graph_orphans:
                h.problems.append(f"{h.graph_orphans} files have call-graph rows but no searchable chunk")
            commit = str(rec.commit or "")
            reasons = {}
            for path, row_commit, empty, damaged in code_files.get(name, []):
                if damaged:
                    reasons[path] = "damaged"
                elif commit and row_commit != commit:
                    reasons[path] = "commit"
                elif path not in paths and not empty and not whole_graph:
                    reasons[path] = "no chunks"
            h.code_file_orphan_reasons = dict(sorted(reasons.items()))
            h.code_file_orphan_paths = sorted(reasons)
            h.code_file_orphans = len(reasons)
            by_reason = Counter(reasons.values())
            if by_reason["damaged"]:
                h.problems.append(f"{by_reason['damaged']} call-graph file rows (code_files) do not decode")
            if by_reason["commit"]:
                h.problems.append(f"{by_reason['commit']} call-graph file rows (code_files) are of another commit "
                                  f"than the indexed {commit[:7]}")
            if by_reason["no chunks"]:
                h.problems.append(f"{by_reason['no chunks']} call-graph file rows (code_files) are of files "
                                  "with no searchable chunk")
        out.append(h)
    return out


def _run_active(sessions, repo: str, ttl: float) -> bool:
    """True while an index run of ``repo`` holds its lock (a heartbeat within ``ttl`` seconds)."""
    from .repo_lock import lock_name
    from .sql_lock import SchedulerLock

    return SchedulerLock(sessions, name=lock_name(repo), ttl=ttl).held()


def _code_files(sessions) -> dict[str, list[tuple[str, str, bool, bool]]]:
    """``{repo: [(path, commit, empty, damaged)]}`` of the ``code_files`` table; ``empty``:
    the stored facts hold nothing (no definitions, calls, imports or variables), as for an
    empty file, which has no chunk by design; ``damaged``: the facts do not decode."""
    import json

    from sqlalchemy import select

    from ..graph.sql_models import CodeFile

    out: dict[str, list[tuple[str, str, bool]]] = defaultdict(list)
    with sessions() as s:
        for repo, path, commit, facts in s.execute(select(CodeFile.repo, CodeFile.path, CodeFile.commit,
                                                          CodeFile.facts_json)):
            try:
                data = json.loads(facts or "{}")
            except ValueError:
                data = {"unreadable": True}
            empty = not any(data.get(k) for k in ("definitions", "calls", "imports", "variables", "unreadable"))
            out[repo].append((path, commit or "", empty, "unreadable" in data))
    return out


def _graph_paths(sessions, repo: str) -> list[str]:
    from sqlalchemy import select

    from ..graph.sql_models import CodeDefinition

    with sessions() as s:
        return list(s.execute(select(CodeDefinition.path).where(CodeDefinition.repo == repo).distinct()).scalars())


def _restore_needed(h: SourceHealth, root: str, commit: str) -> list[str]:
    """Why ``h`` needs its content restored (a re-index at the recorded commit) rather than
    a clean-up: chunks the record counts are missing, the committed generation is gone,
    or call-graph rows are of another commit or of a file the commit has but no chunk
    of. Phantom rows (a file the recorded commit does not have) are not among them."""
    why = []
    if h.record_chunks > h.visible:
        why.append(f"{h.record_chunks - h.visible} of the record's {h.record_chunks} chunks are missing")
    if h.committed_gen >= 1 and not h.runs.get(h.committed_gen):
        why.append(f"the committed generation {h.committed_gen} has no objects")
    other = [p for p, r in h.code_file_orphan_reasons.items() if r == "commit"]
    if other:
        why.append(f"{len(other)} files have call-graph rows of another commit")
    damaged = [p for p, r in h.code_file_orphan_reasons.items() if r == "damaged"]
    if damaged:
        why.append(f"{len(damaged)} call-graph rows do not decode")
    real = [p for p in sorted(set(h.graph_orphan_paths) | {p for p, r in h.code_file_orphan_reasons.items()
                                                            if r == "no chunks"}) if _in_commit(root, commit, p)]
    if real:
        why.append(f"{len(real)} files of commit {commit[:7]} have call-graph rows but no chunk")
    return why


def _in_commit(root: str, commit: str, path: str) -> bool:
    """True when ``path`` exists in ``commit`` of the checkout at ``root`` (``False`` when
    that cannot be told: no checkout, no commit)."""
    import subprocess
    from pathlib import Path

    if not root or not commit or not Path(root).is_dir():
        return False
    return subprocess.run(["git", "-C", root, "cat-file", "-e", f"{commit}:{path}"],
                          capture_output=True).returncode == 0


def repair_index(store, sessions=None, embedder_factory: Callable | None = None,
                 lock_wait_s: float = 30.0, reindex: Callable[[str], str | None] | None = None, *,
                 lock_ttl: float = DEFAULT_LOCK_TTL) -> list[SourceHealth]:
    """:func:`check_index`, then fix what it found (see the module docstring), each
    source under its index lock when ``sessions`` is given; then check again. Returns
    the reports of the second check, with ``repaired`` listing what was done.
    ``embedder_factory()`` gives the embedder for objects whose vector is lost
    everywhere (called at most once, only then).

    A repair restores, never shrinks: missing chunks, a missing committed generation and
    call-graph rows of another commit are repaired by ``reindex(name)`` (a re-index at the
    recorded commit, under the lock; it returns ``None`` or why it could not), never by
    lowering the record's counts or deleting intact data. When it cannot run, the source
    is left as it is and keeps its problems (``doctor`` exits 1). ``lock_ttl``: as for
    :func:`check_index` (also the heartbeat TTL of the locks taken here)."""
    from contextlib import nullcontext

    from weaviate.classes.query import Filter

    done: dict[str, list[str]] = defaultdict(list)
    embedder = None
    for h in check_index(store, sessions, lock_ttl=lock_ttl):
        if h.ok:
            continue
        if sessions is not None:
            from .repo_lock import RepoIndexBusy, repo_index_lock

            # a named ref is written under its base repository's lock (indexer.sources.refs)
            owner = next((r.base for r in store.sources.all() if r.name == h.name and r.base), h.name)
            guard = repo_index_lock(sessions, owner, wait_s=lock_wait_s, ttl_s=lock_ttl)
        else:
            RepoIndexBusy, guard = None, nullcontext()
        try:
            with guard:
                if not h.has_record:
                    if h.orphans:
                        n = versions._delete(store, Filter.by_property("repo").equal(h.name))
                        done[h.name].append(f"deleted {n} objects without a source record")
                    if h.code_file_orphans and sessions is not None:
                        from ..graph.sql_store import delete_repo_graph

                        delete_repo_graph(sessions, h.name)
                        done[h.name].append(f"removed the call graph of {h.code_file_orphans} files "
                                            "without a source record")
                    continue
                rec = store.sources.get(h.name)
                restore = _restore_needed(h, str(rec.root or ""), str(rec.commit or ""))
                if restore:
                    why = reindex(h.name) if reindex is not None else "no re-index available here"
                    if why is None:
                        done[h.name].append(f"re-indexed at the recorded commit {str(rec.commit)[:7]} "
                                            f"({'; '.join(restore)})")
                    else:
                        done[h.name].append(f"not repaired, re-index needed ({'; '.join(restore)}): {why}")
                    continue
                if rec.damaged:
                    gen_r, floor_r, _ = versions.record_state(rec)
                    if "replaced_json" in rec.damaged:
                        # the paths the newest run wrote: their older copies stay hidden
                        store.sources.save(replace(rec, replaced=h._newest_paths if floor_r < gen_r else []))
                    else:
                        store.sources.save(rec)
                    done[h.name].append(f"rewrote the damaged source record ({rec.damaged})")
                    rec = store.sources.get(h.name)
                if h.orphans or h.pending:
                    n = store.runs.cleanup_source(rec)
                    done[h.name].append(f"deleted {n} orphan/superseded objects")
                if h._missing_ids:
                    need_embed = _lost_vectors(store, h._missing_ids)
                    if need_embed and embedder is None and embedder_factory is not None:
                        embedder = embedder_factory()
                        store.sources.check_model(embedder.model_name)
                    n, lost = store.runs.reinsert_with_vectors(h._missing_ids, embedder)
                    done[h.name].append(f"re-inserted {n} objects with their vector"
                                        + (f" ({len(lost)} could not be given one)" if lost else ""))
                if h._stuck_ids:
                    if embedder is None and embedder_factory is not None:
                        embedder = embedder_factory()
                        store.sources.check_model(embedder.model_name)
                    n, lost = store.runs.reinsert_with_vectors(h._stuck_ids, embedder)
                    done[h.name].append(f"gave {n} vector-pending objects their vector"
                                        + (f" ({len(lost)} could not be given one)" if lost else ""))
                    rec = store.sources.get(h.name)
                    left = store.query.count_where(versions.source_filter(rec) &
                                                   Filter.by_property("vector_state").equal("pending"))
                    if int(rec.vectors_pending or 0) != left:
                        rec = replace(rec, vectors_pending=left)
                        store.sources.save(rec)
                gone = sorted(set(h.graph_orphan_paths) | set(h.code_file_orphan_paths))
                if gone and sessions is not None:
                    from ..graph.sql_store import replace_files, repo_commit

                    replace_files(sessions, h.name, rec.commit or repo_commit(sessions, h.name),
                                  {p: None for p in gone})
                    done[h.name].append(f"removed the call-graph rows of {len(gone)} files")
                rec = store.sources.get(h.name)
                visible = store.query.count_where(versions.source_filter(rec))
                if int(rec.chunks or 0) < visible:  # never lowered: fewer means damage
                    store.sources.save(replace(rec, chunks=visible))
                    done[h.name].append(f"set the record's chunk count to {visible}")
        except Exception as exc:  # noqa: BLE001 - report it per source, go on with the others
            if RepoIndexBusy is not None and isinstance(exc, RepoIndexBusy):
                done[h.name].append("not repaired: an index run holds the lock")
            else:
                raise
    after = check_index(store, sessions, lock_ttl=lock_ttl)
    for h in after:
        h.repaired = done.get(h.name, [])
    return after


def _lost_vectors(store, ids: list[str]) -> bool:
    """True when some of ``ids`` have no stored vector (so a re-embedding may be needed)."""
    for i in range(0, len(ids), 100):
        if any(not o.vector for o in store.query.by_ids(ids[i:i + 100], include_vector=True, properties=[])):
            return True
    return False
