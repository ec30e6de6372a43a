"""Drift, stored with the index: the hooks the pipeline calls and the reads the bot makes.

Hooks (called by the indexing pipeline, see docs/operating/drift-and-who.md):

* :func:`refresh_repo` after a repo's code is indexed (full run or push): records the
  repo's ``root``/``commit``, re-extracts its Markdown/RST docs (all, or only
  ``changed_paths`` on a push; ``deleted_paths`` are dropped) and re-resolves every
  reference linked to the repo;
* :func:`record_docs` after Confluence pages are indexed (``deleted`` page paths dropped);
* :func:`forget_source` when a repo or space leaves the index.

Reads: :func:`drift_report` (``coderag drift``, ``/coderag drift``, the weekly digest),
:func:`drift_counts` (``coderag status``), :func:`stale_in_section` (answers).
"""
from __future__ import annotations

import fnmatch
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from sqlalchemy import delete, select
from sqlalchemy.orm import sessionmaker

from common.settings import Settings
from ..sources import git
from ..store.sync_state import aware
from .codeindex import CodeIndex, build_code_index
from .counts import drift_counts  # noqa: F401  (re-exported: part of this module's interface)
from .extract import Reference, extract_references, is_doc_path
from .models import DocRef, KnowledgeRepo
from .resolve import Lookup, find_removals, lookup

log = logging.getLogger(__name__)

_INDEX_CACHE: dict[tuple[str, str], CodeIndex] = {}


@dataclass
class DocText:
    """A doc to check: ``doc`` is its path in the index, ``text`` its Markdown (or RST
    when ``doc`` ends in ``.rst``)."""

    doc: str
    text: str
    title: str = ""
    url: str = ""


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _excluded(path: str, settings: Settings) -> bool:
    low = path.lower()
    return any(fnmatch.fnmatch(low, g.lower()) for g in settings.drift_exclude)


def upsert_repo(sessions: sessionmaker, repo: str, root: str | Path, commit: str) -> None:
    """Remember where ``repo``'s code is and which commit is indexed."""
    with sessions.begin() as s:
        row = s.get(KnowledgeRepo, repo)
        if row is None:
            s.add(KnowledgeRepo(repo=repo, root=str(root), commit=commit, history_commit="", drift_commit="",
                                refreshed_at=_now()))
        else:
            row.root, row.commit, row.refreshed_at = str(root), commit, _now()


def knowledge_repos(sessions: sessionmaker) -> dict[str, KnowledgeRepo]:
    """``{repo: row}`` of every repo drift and ``who`` know."""
    with sessions() as s:
        return {r.repo: r for r in s.execute(select(KnowledgeRepo)).scalars()}


def repo_docs(root: str | Path, commit: str, settings: Settings,
              paths: Iterable[str] | None = None, texts: Mapping[str, str] | None = None) -> list[DocText]:
    """The Markdown/RST docs of ``commit`` (only ``paths`` when given), minus
    ``settings.drift_exclude``, in path order. ``texts``: docs the index run already
    decoded, by path; only the others are read from the commit."""
    files = [f for f in git.list_files(Path(root), commit)
             if is_doc_path(f.path) and not _excluded(f.path, settings)]
    if paths is not None:
        wanted = set(paths)
        files = [f for f in files if f.path in wanted]
    texts = texts or {}
    docs = [DocText(f.path, texts[f.path], title=f.path) for f in files if f.path in texts]
    for f, data in git.read_blobs(Path(root), [f for f in files if f.path not in texts]):
        try:
            docs.append(DocText(f.path, data.decode("utf-8"), title=f.path))
        except UnicodeDecodeError:
            continue
    return sorted(docs, key=lambda d: d.doc)


def _replace_docs(sessions: sessionmaker, source: str, docs: Sequence[DocText], gone: Iterable[str] = ()) -> int:
    """Replace the stored references of ``docs`` (and drop ``gone`` docs); returns how many
    references were extracted."""
    rows = []
    for d in docs:
        for r in extract_references(d.doc, d.text):
            rows.append(dict(source=source, doc=d.doc, title=d.title[:500], url=d.url[:2000], section=r.section[:1000],
                             section_start=r.section_start, section_end=r.section_end, line=r.line,
                             kind=r.kind, ref=r.ref[:500], key=r.key[:500], external=r.external, context=r.context,
                             status="unknown", note="", repo="", evidence="",
                             removed_commit="", removed_summary="", new_name="", new_evidence=""))
    names = [d.doc for d in docs] + list(gone)
    with sessions.begin() as s:
        for i in range(0, len(names), 500):
            s.execute(delete(DocRef).where(DocRef.source == source, DocRef.doc.in_(names[i:i + 500])))
        if rows:
            s.execute(DocRef.__table__.insert(), rows)
    return len(rows)


def _row_ref(row: DocRef) -> Reference:
    return Reference(row.kind, row.ref, row.key, row.line, row.section, row.section_start, row.section_end,
                     external=row.external, context=row.context or "")


def linked_repos(source: str, settings: Settings, known: Iterable[str]) -> list[str]:
    """The repos ``source``'s docs are checked against: ``CODERAG_DRIFT_SPACE_REPOS[source]``
    (a Confluence space, or a repo whose docs describe other repos), else the source's own
    repository only. Never every indexed repository: an unrelated repository would change
    this source's drift, and its names and commits would show wherever this source's docs do
    (in a channel allowed only this source)."""
    known = list(known)
    if source in settings.drift_space_repos:
        return [r for r in settings.drift_space_repos[source] if r in known]
    return [source] if source in known else []


def code_index(sessions: sessionmaker | None, row: KnowledgeRepo, settings: Settings) -> CodeIndex:
    """The :class:`CodeIndex` of a known repo at its indexed commit (cached per process)."""
    key = (row.repo, row.commit)
    idx = _INDEX_CACHE.get(key)
    if idx is None:
        for k in [k for k in _INDEX_CACHE if k[0] == row.repo]:
            del _INDEX_CACHE[k]
        idx = build_code_index(row.repo, row.root, row.commit, sessions=sessions,
                               max_file_bytes=settings.max_file_bytes)
        _INDEX_CACHE[key] = idx
    return idx


_MISSING_NOTE = "not in the code nor in its last"


def previous_results(sessions: sessionmaker, sources: Iterable[str] | None = None) -> dict[tuple, dict]:
    """``{(kind, key, external): {...}}`` of the references already judged missing (stale,
    or never seen), to date them again from the new commits only (see :func:`resolve_sources`)."""
    with sessions() as s:
        q = select(DocRef).where(DocRef.status.in_(("stale", "unknown")))
        if sources is not None:
            q = q.where(DocRef.source.in_(list(sources)))
        out = {}
        for r in s.execute(q).scalars():
            if r.status == "stale" or r.note.startswith(_MISSING_NOTE):
                out[(r.kind, r.key, r.external)] = dict(
                    status=r.status, repo=r.repo, removed_commit=r.removed_commit, removed_at=aware(r.removed_at),  # SQLite hands it back naive
                    removed_summary=r.removed_summary, new_name=r.new_name, new_evidence=r.new_evidence, note=r.note)
        return out


def _is_ancestor(root: str, base: str, commit: str) -> bool:
    import subprocess

    return subprocess.run(["git", "-C", root, "merge-base", "--is-ancestor", base, commit],
                          capture_output=True).returncode == 0


def resolve_sources(sessions: sessionmaker, settings: Settings, sources: Iterable[str] | None = None, *,
                    previous: dict[tuple, dict] | None = None) -> dict:
    """Re-resolve the stored references of ``sources`` (default: all) against their linked
    repos; returns ``{"refs", "ok", "stale", "unknown", "seconds_index", "seconds_lookup",
    "seconds_history", "history_scans"}``.

    ``previous`` (:func:`previous_results`, default: read now) are earlier verdicts on
    missing references: when a repo's code moved forward from the commit those were made
    at (``drift_commit``, an ancestor), only the new commits are scanned for them.
    """
    if previous is None:
        previous = previous_results(sessions, sources)
    repos = knowledge_repos(sessions)
    with sessions() as s:
        q = select(DocRef)
        if sources is not None:
            q = q.where(DocRef.source.in_(list(sources)))
        rows = list(s.execute(q).scalars())
    stats = {"refs": len(rows), "ok": 0, "stale": 0, "unknown": 0, "seconds_index": 0.0,
             "seconds_lookup": 0.0, "seconds_history": 0.0, "history_scans": []}
    t0 = time.perf_counter()
    indexes: dict[str, CodeIndex] = {}
    for src in {r.source for r in rows}:
        for name in linked_repos(src, settings, repos):
            if name not in indexes:
                try:
                    indexes[name] = code_index(sessions, repos[name], settings)
                except Exception as exc:  # noqa: BLE001 - a moved/deleted checkout: its refs stay unknown
                    log.warning("drift: cannot read %s at %s: %s", name, repos[name].root, exc)
    stats["seconds_index"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    results: dict[tuple, Lookup] = {}
    missing: dict[str, dict[tuple, Reference]] = {}  # repo -> unique missing refs
    per_row: list[tuple[DocRef, tuple]] = []
    for row in rows:
        ref = _row_ref(row)
        links = [indexes[n] for n in linked_repos(row.source, settings, repos) if n in indexes]
        ukey = (ref.kind, ref.key, ref.external, tuple(i.repo for i in links))
        if ukey not in results:
            res = lookup(ref, links)
            results[ukey] = res
            if res.status == "missing":
                for i in links:
                    missing.setdefault(i.repo, {})[ukey] = ref
        per_row.append((row, ukey))
    stats["seconds_lookup"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    removals: dict[tuple, tuple[str, object]] = {}
    reused: dict[tuple, dict] = {}  # ukey -> previous verdict still valid
    from .resolve import Removal, spec_removal

    for name, refs in missing.items():
        row = repos[name]
        base = row.drift_commit
        incremental = bool(base) and (base == row.commit or _is_ancestor(row.root, base, row.commit))
        known = [k for k in refs if incremental and k[:3] in previous
                 and previous[k[:3]]["repo"] in ("", name)]
        fresh = [k for k in refs if k not in set(known)]
        for keys, since in ((fresh, ""), (known, base)):
            if not keys or (since and since == row.commit):
                continue
            try:
                found = find_removals(row.root, row.commit, [refs[k] for k in keys],
                                      max_commits=settings.drift_history_commits, base=since)
            except Exception as exc:  # noqa: BLE001
                log.warning("drift: cannot read the history of %s: %s", name, exc)
                continue
            stats["history_scans"].append({"repo": name, "refs": len(keys), "since": since[:12]})
            for i, rem in found.items():
                old = removals.get(keys[i])
                if old is None or rem.committed_at > old[1].committed_at:
                    removals[keys[i]] = (name, rem)
        for k in known:
            p = previous[k[:3]]
            if k not in removals and p["status"] == "stale" and p["repo"] == name:
                removals[k] = (name, Removal(p["removed_commit"], p["removed_at"], p["removed_summary"],
                                             p["note"].removeprefix("removed from "), p["new_name"]))
                reused[k] = p
        for k, ref in refs.items():  # an operation a spec lost while keeping its route: dated by the spec's history
            if k in removals or ref.kind != "endpoint" or not results[k].note.startswith("the spec has"):
                continue
            try:
                rem = spec_removal(row.root, row.commit, indexes[name], ref)
            except Exception as exc:  # noqa: BLE001
                log.warning("drift: cannot read the spec history of %s: %s", name, exc)
                continue
            if rem is not None:
                removals[k] = (name, rem)
    with sessions.begin() as s:
        for name in missing:
            kr = s.get(KnowledgeRepo, name)
            if kr is not None:
                kr.drift_commit = kr.commit
    stats["seconds_history"] = time.perf_counter() - t2
    now = _now()
    updates = []
    for row, ukey in per_row:
        res = results[ukey]
        u = dict(id=row.id, status=res.status, repo=res.repo, evidence=res.evidence[:1200],
                 note=("external" if ukey[2] else "") if res.status == "ok" else res.note,
                 removed_commit="", removed_at=None, removed_summary="", new_name="", new_evidence="",
                 checked_at=now)
        if res.status == "missing":
            rem = removals.get(ukey)
            if rem is None:
                u["status"] = "unknown"
                u["note"] = (f"not in the code nor in its last {settings.drift_history_commits} commits "
                             + (f"({res.note})" if res.note else "(external, or misspelt?)"))
            else:
                name, r = rem
                u.update(status="stale", repo=name, removed_commit=r.commit, removed_at=r.committed_at,
                         removed_summary=r.summary[:500], note=f"removed from {r.path}")
                if ukey in reused and r.new_name:  # dated earlier: keep its new name if still in the code
                    new_ref = Reference(ukey[0], r.new_name, r.new_name.lstrip("-") if ukey[0] == "flag"
                                        else r.new_name, row.line)
                    found = lookup(new_ref, [indexes[name]])
                    if found.status == "ok":
                        u["new_name"], u["new_evidence"] = r.new_name[:500], found.evidence[:1200]
                elif r.new_name:
                    new_ref = Reference(ukey[0], r.new_name, r.new_name, row.line)
                    if ukey[0] == "flag":
                        new_ref = Reference("flag", "--" + r.new_name, r.new_name, row.line)
                    found = lookup(new_ref, [indexes[name]])
                    if found.status == "ok":
                        u["new_name"] = new_ref.ref[:500]
                        u["new_evidence"] = found.evidence[:1200]
        if u["status"] == "unknown" and row.context in CONTEXT_NOTES:
            u["note"] = CONTEXT_NOTES[row.context]
        if ukey[2] and u["status"] == "unknown" and not u["note"]:
            u["note"] = "external"
        stats[u["status"]] += 1
        updates.append(u)
    with sessions.begin() as s:
        for i in range(0, len(updates), 2000):
            s.execute(DocRef.__table__.update().where(DocRef.id == _bindparam("id_")),
                      [{**{k: v for k, v in u.items() if k != "id"}, "id_": u["id"]} for u in updates[i:i + 2000]])
    return stats


#: The reason a reference named on purpose as something other than current code is not stale.
OUTSIDE_NOTE = "checked against a source this channel cannot read"
CONTEXT_NOTES = {"history": "named in a version, deprecation or removal note: not a claim about the current code",
                 "example": "a name the doc's own example defines"}


def _bindparam(name: str):
    from sqlalchemy import bindparam

    return bindparam(name)


def refresh_repo(sessions: sessionmaker, settings: Settings, repo: str, root: str | Path, commit: str, *,
                 changed_paths: Iterable[str] | None = None, deleted_paths: Iterable[str] = (),
                 texts: Mapping[str, str] | None = None) -> dict:
    """**Hook** after ``repo`` is indexed at ``commit`` (full: ``changed_paths=None``; push:
    the changed and deleted paths; ``texts``: the docs the run decoded, by path). Returns the :func:`resolve_sources` stats plus
    ``docs`` (re-extracted) and ``seconds_extract``."""
    upsert_repo(sessions, repo, root, commit)
    previous = previous_results(sessions)
    t0 = time.perf_counter()
    changed = None if changed_paths is None else [p for p in changed_paths if is_doc_path(p)]
    docs = repo_docs(root, commit, settings, changed, texts)
    gone = [p for p in deleted_paths if is_doc_path(p)]
    if changed is None:
        with sessions() as s:
            stored = set(s.execute(select(DocRef.doc).where(DocRef.source == repo).distinct()).scalars())
        gone += sorted(stored - {d.doc for d in docs})
    extracted = _replace_docs(sessions, repo, docs, gone)
    t_extract = time.perf_counter() - t0
    repos = knowledge_repos(sessions)
    with sessions() as s:
        sources = set(s.execute(select(DocRef.source).distinct()).scalars())
    # this repo's own docs (whatever they are linked to), and every source linked to its code
    affected = [src for src in sources if src == repo or repo in linked_repos(src, settings, repos)]
    stats = resolve_sources(sessions, settings, affected, previous=previous)
    return {**stats, "docs": len(docs), "extracted": extracted, "seconds_extract": t_extract}


def record_docs(sessions: sessionmaker, settings: Settings, source: str, docs: Sequence[DocText], *,
                deleted: Iterable[str] = ()) -> dict:
    """**Hook** after Confluence pages of space ``source`` are indexed (``docs``: the
    converted Markdown of each new/changed page; ``deleted``: paths of removed pages)."""
    previous = previous_results(sessions)
    extracted = _replace_docs(sessions, source, docs, deleted)
    return {**resolve_sources(sessions, settings, [source], previous=previous), "extracted": extracted}


def forget_source(sessions: sessionmaker, source: str) -> None:
    """**Hook** when a repo or space is removed: its references and its repo record go."""
    with sessions.begin() as s:
        s.execute(delete(DocRef).where(DocRef.source == source))
        s.execute(delete(KnowledgeRepo).where(KnowledgeRepo.repo == source))
    for k in [k for k in _INDEX_CACHE if k[0] == source]:
        del _INDEX_CACHE[k]


def _stale_dict(r: DocRef) -> dict:
    return {"source": r.source, "doc": r.doc, "title": r.title, "url": r.url, "section": r.section,
            "line": r.line, "kind": r.kind, "ref": r.ref, "repo": r.repo,
            "removed_commit": r.removed_commit, "removed_at": r.removed_at.isoformat() if r.removed_at else None,
            "removed_summary": r.removed_summary, "new_name": r.new_name, "new_evidence": r.new_evidence,
            "note": r.note}


def drift_report(sessions: sessionmaker, source: str | None = None, *,
                 allowed: Iterable[str] | None = None) -> dict:
    """The stale references, per source, doc and section, and the counts.

    Shape: ``{"counts": {"found", "ok", "stale", "unknown"}, "stale": [ref dicts],
    "sources": [{"source", "docs": [{"doc", "title", "url", "sections": [{"section",
    "stale": [...]}]}]}], "unknown": [{"source", "doc", "section", "line", "kind", "ref",
    "context", "note"}]}``; a ref dict has ``doc, section, line, kind, ref, repo,
    removed_commit, removed_at (ISO), removed_summary, new_name, new_evidence, note``.
    An unknown reference's ``note`` is why it could not be checked; one checked against a
    repository outside ``allowed`` says only that.
    ``source``: only that repo/space; ``allowed``: only these sources (channel scoping),
    and a reference resolved against a repository outside them counts as unknown.
    Raises ``BadInput`` for a ``source`` with no checked docs.
    """
    with sessions() as s:
        q = select(DocRef)
        if source is not None:
            q = q.where(DocRef.source == source)
        rows = list(s.execute(q.order_by(DocRef.source, DocRef.doc, DocRef.line)).scalars())
    hidden: set[int] = set()
    if allowed is not None:
        allowed = set(allowed)
        rows = [r for r in rows if r.source in allowed]
        # a reference resolved against a repository outside ``allowed`` (a mapping that
        # links this source to it) is unknown here: its commits and paths are not shown
        hidden = {id(r) for r in rows if r.status == "stale" and r.repo not in allowed}
    if source is not None and not rows:
        from common.errors import BadInput

        raise BadInput(f"no checked docs in {source!r} (see `coderag status`; docs are checked when "
                       "their repo or space is indexed)")
    counts = {"found": len(rows), "ok": 0, "stale": 0, "unknown": 0}
    tree: dict[str, dict[str, dict]] = {}
    stale, unknown = [], []
    for r in rows:
        status = "unknown" if id(r) in hidden else r.status
        counts[status if status in counts else "unknown"] += 1
        if status != "stale":
            if status != "ok":
                outside = id(r) in hidden or (allowed is not None and r.repo and r.repo not in allowed)
                unknown.append({"source": r.source, "doc": r.doc, "section": r.section, "line": r.line,
                                "kind": r.kind, "ref": r.ref, "context": r.context,
                                "note": OUTSIDE_NOTE if outside else r.note})
            continue
        d = _stale_dict(r)
        stale.append(d)
        doc = tree.setdefault(r.source, {}).setdefault(r.doc, {"doc": r.doc, "title": r.title, "url": r.url,
                                                                 "sections": {}})
        doc["sections"].setdefault(r.section, []).append(d)
    sources = [{"source": src, "docs": [{**{k: v for k, v in d.items() if k != "sections"},
                                          "sections": [{"section": sec, "stale": refs}
                                                       for sec, refs in d["sections"].items()]}
                                         for d in docs.values()]}
               for src, docs in tree.items()]
    return {"counts": counts, "stale": stale, "sources": sources, "unknown": unknown}


def stale_in_section(sessions: sessionmaker, source: str, doc: str, start_line: int, end_line: int, *,
                     allowed: Iterable[str] | None = None) -> list[dict]:
    """Stale references of ``doc`` between lines ``start_line`` and ``end_line`` (a cited
    chunk), as :func:`drift_report` ref dicts. ``allowed``: only references resolved
    against these repositories (a note must not name another one's commits or paths)."""
    with sessions() as s:
        rows = s.execute(select(DocRef).where(DocRef.source == source, DocRef.doc == doc,
                                              DocRef.status == "stale", DocRef.line >= start_line,
                                              DocRef.line <= end_line).order_by(DocRef.line)).scalars()
        keep = None if allowed is None else set(allowed)
        return [_stale_dict(r) for r in rows if keep is None or r.repo in keep]
