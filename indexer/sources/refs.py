"""Named refs of a repository (release tags, release branches), indexed besides its
default branch, each costing only its difference from it.

A repo entry of ``CODERAG_REPOS`` may name ``refs``: tag patterns (``fnmatch`` globs on
tag names, the newest ``max_refs`` of each by tag date) and branch names. Each selected
ref is indexed as a **ref source** named ``<repo>@<ref>`` (``shop@v2.3``,
``shop@release/4.x``), kind ``git-ref``, an *overlay* of the repository's source (its
*base*, the default branch):

* its record (:class:`~indexer.models.SourceRecord`) names the base, the ref, the ref's
  commit, and ``differs``: the paths whose blob differs between the ref's commit and the
  base's committed commit (``git diff --name-only --no-renames``: changed, added and
  deleted files; a rename is its two paths);
* it holds chunks only for ``differs`` (read at the ref's commit; vectors reused by
  content hash like every run, so a ref mostly embeds nothing), written by the one
  :class:`~indexer.pipeline.IndexingPipeline` under the versioned write protocol
  (:mod:`indexer.store.versions`: generations, verify, commit, clean-up);
* its call graph is stored whole, at the ref's commit (``impact --ref``: SQL rows are
  cheap, and a caller in an unchanged file may call a changed function), and ``who``
  reads its history up to the ref's commit;
* a reader at the ref sees the base's visible chunks minus ``differs`` plus the ref's own
  (:func:`indexer.store.versions.ref_filter`); chunks taken from the base are cited with
  the ref's name and commit (the lines of an unchanged file are the same at both).

The invariant readers rely on: for every path *not* in a ref's ``differs``, the file is
the same at the ref's commit and at the base's committed commit. The base moves with
every push, so a sync keeps it in two steps around the base's own run:

1. :func:`widen_refs`, before the base's run commits the new head ``H``: each ref takes
   ``differs = diff(ref, B) ∪ diff(ref, H)`` (``B``: the base's committed commit) and the
   chunks of the paths it gains; true whether the base is at ``B`` or at ``H``;
2. :func:`refresh_refs`, after the base's run (and on a sync that finds the head already
   indexed): each configured ref takes ``differs = diff(ref, H)`` (dropping the chunks
   of paths that are the same again), a ref whose commit moved (a re-pointed tag, a
   pushed release branch) or a new one is indexed in full, and a ref source no longer
   selected (tag deleted, pattern removed, past ``max_refs``) is removed.

A crash between the steps leaves a ``differs`` too large (correct, merely larger than
needed); the next sync narrows it. Each step is an ordinary run of the ref source, under
the base repository's index lock (the caller holds it).
"""
from __future__ import annotations

import fnmatch
import logging
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from common.errors import CoderagError

from ..models import (GRAPH_NONE, GRAPH_REPO, KIND_GIT_REF, REPLACE_ALL, REPLACE_PATHS, SKIP_SYMLINK, Skips,
                      SourceBatch, SourceRecord)
from ..pipeline import IndexingPipeline
from ..results import PipelineResult
from . import git

log = logging.getLogger(__name__)

#: Characters that make a ``refs`` entry a glob rather than one name.
_GLOB = set("*?[")


class RefError(CoderagError):
    """A git command on the repository's refs failed (listing tags, a diff)."""


@dataclass(frozen=True)
class RefTarget:
    """One selected ref: ``ref`` its name (a tag or branch name as git spells it after
    ``refs/tags/`` or ``refs/heads/``), ``commit`` the commit it points at (40 hex; a tag
    of a tag is followed to its commit), ``kind`` ``"tag"`` or ``"branch"``. ``problem``:
    why the ref cannot be indexed (a tag of a tree or a blob; ``commit`` is then ``""``)."""

    ref: str
    commit: str
    kind: str = "tag"
    problem: str = ""


@dataclass
class RefResult:
    """What keeping one ref source did: ``mode`` is ``full`` (indexed at its commit),
    ``incremental`` (``differs`` changed), ``noop``, ``removed`` or ``unresolved`` (the ref
    names no commit: ``reason`` says why, nothing is indexed); ``differs``: how many
    paths it takes from itself now; ``run``: the pipeline's (last) result (``None`` for
    ``noop``/``removed``/``unresolved``); ``before``/``after``: the differing paths
    before and after (``before`` ``None`` for a new ref); ``chunks_written`` and
    ``embedded`` count over every run that kept it (a sync runs a ref twice, around its
    base: :func:`merge_ref_results`)."""

    name: str
    ref: str
    commit: str
    mode: str
    differs: int = 0
    run: PipelineResult | None = None
    reason: str = ""
    before: frozenset | None = field(default=None, repr=False)
    after: frozenset = field(default=frozenset(), repr=False)
    chunks_written: int = 0
    embedded: int = 0

    @property
    def gained(self) -> int:
        """Paths the ref takes from itself now and did not before (all of them when new)."""
        return len(self.after - (self.before or frozenset()))

    @property
    def dropped(self) -> int:
        """Paths the ref took from itself before and shares with its base now."""
        return len((self.before or frozenset()) - self.after)

    def to_dict(self) -> dict:
        """``{"name", "ref", "commit", "mode", "differs", "gained", "dropped",
        "chunks_written", "embedded"}``, and ``"reason"`` for an unresolved ref."""
        return {"name": self.name, "ref": self.ref, "commit": self.commit, "mode": self.mode,
                "differs": self.differs, "gained": self.gained, "dropped": self.dropped,
                "chunks_written": self.chunks_written, "embedded": self.embedded,
                **({"reason": self.reason} if self.reason else {})}


def merge_ref_results(first: Sequence[RefResult], then: Sequence[RefResult]) -> list[RefResult]:
    """One result per ref of a run that kept its refs twice (:func:`widen_refs` before the
    base's commit, ``first``; :func:`refresh_refs` after it, ``then``): what changed over
    both, so a ref that gained paths while widening is not reported ``noop`` because the
    second step found nothing more to do."""
    earlier = {r.name: r for r in first}
    out = []
    for r in then:
        w = earlier.pop(r.name, None)
        if w is None or w.mode not in ("full", "incremental") or r.mode in ("removed", "unresolved"):
            out.append(r)
            continue
        mode = "full" if "full" in (w.mode, r.mode) else "incremental"
        out.append(RefResult(r.name, r.ref, r.commit, mode, r.differs, r.run or w.run, before=w.before,
                             after=r.after, chunks_written=w.chunks_written + r.chunks_written,
                             embedded=w.embedded + r.embedded))
    return out + list(earlier.values())


def ref_source_name(base: str, ref: str) -> str:
    """The source name of ``ref`` of repository ``base``: ``base@ref``."""
    return f"{base}@{ref}"


def _git(root: Path | str, *args: str) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise RefError(f"git {args[0]} timed out in {Path(root).name}") from None
    if proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        raise RefError(f"git {args[0]} failed in {Path(root).name}: {msg[0][:200]}")
    return proc.stdout.decode("utf-8", "replace")


def _tags(root: Path | str) -> list[tuple[str, str, str]]:
    """``(tag name, commit, problem)`` of every tag, newest first (tag date: the tagger's
    for an annotated tag, the commit's for a lightweight one; the same date: the higher
    version first). A tag of a tag is peeled to its commit, however deep (``^{}``); a tag
    that ends at a tree or a blob has commit ``""`` and a ``problem`` saying so."""
    out = _git(root, "for-each-ref", "--sort=-version:refname", "--sort=-creatordate",  # the last key sorts first
               "--format=%(refname:strip=2)%00%(objecttype)%00%(objectname)%00%(*objecttype)%00%(*objectname)",
               "refs/tags")
    tags: list[list[str]] = []
    deep: list[int] = []  # tags whose first peel is not a commit: peeled fully below
    for line in out.splitlines():
        parts = line.split("\0")
        if len(parts) != 5:
            continue
        name, typ, obj, peeled_type, peeled = parts
        if typ == "commit":
            tags.append([name, obj, ""])
        elif typ == "tag" and peeled_type == "commit":
            tags.append([name, peeled, ""])
        else:
            deep.append(len(tags))
            tags.append([name, "", f"tag {name} points at a {peeled_type or typ}, not a commit"])
    if deep:
        for i, (sha, typ) in zip(deep, _peel(root, [f"refs/tags/{tags[i][0]}" for i in deep])):
            if typ == "commit":
                tags[i][1:] = [sha, ""]
            elif typ:
                tags[i][2] = f"tag {tags[i][0]} points at a {typ}, not a commit"
    return [(n, c, p) for n, c, p in tags]


def _peel(root: Path | str, refs: Sequence[str]) -> list[tuple[str, str]]:
    """``(object, type)`` each of ``refs`` ends at once every tag on the way is followed
    (``("", "")`` when git cannot say): one ``git cat-file --batch-check``."""
    try:
        proc = subprocess.run(["git", "-C", str(root), "cat-file", "--batch-check=%(objectname) %(objecttype)"],
                              input="".join(f"{r}^{{}}\n" for r in refs).encode(), capture_output=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise RefError(f"git cat-file timed out in {Path(root).name}") from None
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    out = []
    for i in range(len(refs)):
        parts = lines[i].split() if i < len(lines) else []
        out.append((parts[0], parts[1]) if len(parts) == 2 and parts[1] != "missing" else ("", ""))
    return out


def _branches(root: Path | str) -> dict[str, str]:
    """``{branch: commit}`` of the local branches (a mirror's are the remote's), then of
    ``origin``'s remote-tracking branches not among them (a work tree's release branches)."""
    out = _git(root, "for-each-ref", "--format=%(refname)%00%(objectname)", "refs/heads", "refs/remotes/origin")
    heads: dict[str, str] = {}
    remote: dict[str, str] = {}
    for line in out.splitlines():
        name, _, sha = line.partition("\0")
        if name.startswith("refs/heads/"):
            heads[name[len("refs/heads/"):]] = sha
        elif name.startswith("refs/remotes/origin/") and not name.endswith("/HEAD"):
            remote[name[len("refs/remotes/origin/"):]] = sha
    return {**remote, **heads}


def select_refs(root: Path | str, patterns: Sequence[str], max_refs: int) -> list[RefTarget]:
    """The refs ``patterns`` select in the repository at ``root`` (a mirror or a work
    tree): for each pattern, the newest ``max_refs`` tags whose name it matches
    (``fnmatch``, case-sensitive); a pattern that matches no tag and is a branch's name
    selects that branch. Each ref once, in pattern order. A pattern that selects nothing
    is not an error (the tag may come later): it is returned as a target of kind
    ``"pattern"`` with its ``problem``, to be reported. A matching tag that names no commit
    (it ends at a tree or a blob) does not count against ``max_refs``; one newer than the
    last selected tag is returned with its ``problem``, to be reported. Raises
    :class:`RefError` when git cannot list the refs."""
    if not patterns:
        return []
    tags = _tags(root)
    branches: dict[str, str] | None = None
    out: dict[str, RefTarget] = {}
    for pattern in patterns:
        matched = [t for t in tags if fnmatch.fnmatchcase(t[0], pattern)]
        good = 0
        for name, commit, problem in matched:
            if good >= max(1, max_refs):
                break
            out.setdefault(name, RefTarget(name, commit, "tag", problem))
            good += not problem
        if matched:
            continue
        if branches is None:
            branches = _branches(root)
        if not (_GLOB & set(pattern)) and pattern in branches:
            out.setdefault(pattern, RefTarget(pattern, branches[pattern], "branch"))
        else:  # reported (the tag may come later): a target without a commit, kind "pattern"
            log.info("%s: ref pattern %r selects no tag or branch", Path(root).name, pattern)
            out.setdefault(pattern, RefTarget(pattern, "", "pattern", "matches no tag or branch"))
    return list(out.values())


def differing_paths(root: Path | str, a: str, b: str) -> set[str]:
    """Paths whose content differs between commits ``a`` and ``b`` (changed, added and
    deleted files; a rename counts as its old and its new path). Raises :class:`RefError`."""
    if a == b:
        return set()
    out = _git(root, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv",
               "--end-of-options", a, b, "--")
    return {p for p in out.split("\0") if p}


def ref_records(pipeline: IndexingPipeline, base: str) -> list[SourceRecord]:
    """The ref sources of repository ``base`` (their committed records), by name."""
    return [r for r in pipeline.store.sources.all() if r.base == base]


def index_ref(pipeline: IndexingPipeline, root: Path | str, base: SourceRecord, target: RefTarget, *,
              against: Iterable[str], url_template: str = "", force_full: bool = False) -> RefResult:
    """Bring the ref source of ``target`` (a ref of repository ``base``, whose committed
    record is given) in line with the base commits ``against``: ``differs`` becomes the
    paths that differ between the ref's commit and any of them.

    The same commit as the committed ref source (and not ``force_full``): an incremental
    run that writes the chunks of the paths it gains and hides those of the paths it
    drops, or nothing when ``differs`` is unchanged. Otherwise (a new ref, a ref whose
    commit moved, a first index whose vectors never finished): a full run of the ref's
    commit, every file read for the call graph, only ``differs`` chunked. Raises
    :class:`RefError` and the pipeline's errors (``ModelMismatch``,
    ``WeaviateUnavailable``)."""
    from ..store.sync_state import mark_ref_source

    store, settings = pipeline.store, pipeline.settings
    name = ref_source_name(base.name, target.ref)
    differs: set[str] = set()
    for commit in dict.fromkeys(c for c in against if c):
        differs |= differing_paths(root, target.commit, commit)
    prev = store.sources.get(name)
    skips = Skips()
    same = (prev is not None and not force_full and prev.commit == target.commit and prev.base == base.name
            and not prev.damaged and not int(prev.vectors_pending or 0))
    if same:
        old = set(prev.differs)
        if old == differs:
            return RefResult(name, target.ref, target.commit, "noop", len(differs), before=frozenset(old),
                             after=frozenset(differs))
        gained, dropped = differs - old, old - differs
        files = [f for f in git.list_files(Path(root), target.commit) if f.path in gained]
        documents, count = git.commit_documents(Path(root), target.commit, files, settings.max_file_bytes, skips)
        batch = SourceBatch(name=name, kind=KIND_GIT_REF, root=str(root), commit=target.commit, documents=documents,
                            replace=REPLACE_PATHS, graph=GRAPH_NONE, replaced_paths=gained | dropped,
                            url_template=url_template, skips=skips, document_count=count, state_mode="incremental",
                            base=base.name, ref=target.ref, differs=frozenset(differs))
        mode = "incremental"
    else:
        links: list[str] = []
        files = git.list_files(Path(root), target.commit, symlinks=links)
        for link in links:
            skips.add(SKIP_SYMLINK, link)
        documents, count = git.commit_documents(Path(root), target.commit, files, settings.max_file_bytes, skips)
        batch = SourceBatch(name=name, kind=KIND_GIT_REF, root=str(root), commit=target.commit, documents=documents,
                            replace=REPLACE_ALL, graph=GRAPH_REPO, url_template=url_template, skips=skips,
                            document_count=count, state_mode="full", base=base.name, ref=target.ref,
                            differs=frozenset(differs))
        mode = "full"
    if pipeline.sessions is not None:
        mark_ref_source(pipeline.sessions, name)
    res = pipeline.run(batch)
    log.info("%s: %s run at %s (%d paths differ from %s)", name, mode, target.commit[:7], len(differs),
             base.name)
    return RefResult(name, target.ref, target.commit, mode, len(differs), res,
                     before=frozenset(prev.differs) if same else None, after=frozenset(differs),
                     chunks_written=res.chunks_written, embedded=res.embedded)


def widen_refs(pipeline: IndexingPipeline, base_name: str, root: Path | str, head: str) -> list[RefResult]:
    """Step 1 of keeping refs (module docstring): before the base ``base_name`` commits
    ``head``, each of its ref sources takes the paths that differ between its commit and
    ``head`` too. ``[]`` when the base has no committed record or is at ``head``. A ref
    whose commit is no longer in the repository is removed (nothing can be diffed)."""
    base = pipeline.store.sources.get(base_name)
    if base is None or not base.commit or base.commit == head:
        return []
    out = []
    for rec in ref_records(pipeline, base_name):
        if not _has_commit(root, rec.commit):
            out.append(remove_ref(pipeline, rec.name))
            continue
        out.append(index_ref(pipeline, root, base, RefTarget(rec.ref, rec.commit), against=[base.commit, head],
                             url_template=rec.url_template))
    return out


def refresh_refs(pipeline: IndexingPipeline, base_name: str, root: Path | str, patterns: Sequence[str],
                 max_refs: int, *, url_template: str = "") -> list[RefResult]:
    """Step 2 of keeping refs (module docstring): after the base's run, index the refs
    ``patterns`` select (:func:`select_refs`) against the base's committed commit, and
    remove the base's ref sources no longer selected. ``[]`` when the base has no
    committed record and no ref sources. Raises :class:`RefError` and the pipeline's
    errors; refs done before a failure stay done."""
    base = pipeline.store.sources.get(base_name)
    existing = {r.ref: r for r in ref_records(pipeline, base_name)}
    if base is None or not base.commit:
        return [remove_ref(pipeline, r.name) for r in existing.values()] + _unresolved(pipeline, base_name, [])
    targets = select_refs(root, patterns, max_refs)
    good = [t for t in targets if not t.problem]
    out = [index_ref(pipeline, root, base, t, against=[base.commit], url_template=url_template) for t in good]
    chosen = {t.ref for t in good}
    out += [remove_ref(pipeline, r.name) for ref, r in sorted(existing.items()) if ref not in chosen]
    return out + _unresolved(pipeline, base_name, [t for t in targets if t.problem])


def _unresolved(pipeline: IndexingPipeline, base_name: str, targets: Sequence[RefTarget]) -> list[RefResult]:
    """Report the selected refs of ``base_name`` that name no commit: logged, and kept as
    their source's last error (a state row without a commit, which ``coderag status``
    shows); such rows of refs no longer selected (or resolved since) are dropped."""
    from ..models import KIND_GIT_REF
    from ..store.sync_state import forget_sources, record_error, ref_sources

    out = []
    for t in targets:
        name = ref_source_name(base_name, t.ref)
        why = (f"ref pattern {t.ref!r} of {base_name} {t.problem}" if t.kind == "pattern" else t.problem)
        log.info("%s: not indexed: %s", name, why)  # the run reports it (RefResult), status shows it
        if pipeline.sessions is not None:
            record_error(pipeline.sessions, name, KIND_GIT_REF, f"not indexed: {why}")
        out.append(RefResult(name, t.ref, "", "unresolved", reason=why))
    if pipeline.sessions is not None:
        keep = {r.name for r in out} | {r.name for r in ref_records(pipeline, base_name)}
        stale = [n for n, commit in ref_sources(pipeline.sessions).items()
                 if n.startswith(f"{base_name}@") and not commit and n not in keep]
        if stale:
            forget_sources(pipeline.sessions, stale)
    return out


def remove_ref(pipeline: IndexingPipeline, name: str) -> RefResult:
    """Remove the ref source ``name``: its record first (readers at the ref stop at once),
    then its chunks, call graph, sync state and authorship rows."""
    from ..graph.sql_store import delete_repo_graph
    from ..store.sync_state import forget_sources

    rec = pipeline.store.sources.get(name)
    pipeline.store.sources.delete(name)
    pipeline.store.data.delete_repo(name)  # its chunks (the record is gone already)
    if pipeline.sessions is not None:
        delete_repo_graph(pipeline.sessions, name)
        forget_sources(pipeline.sessions, [name])
    pipeline.source_removed(name)  # its subscribers' rows (authorship)
    log.info("%s: ref source removed", name)
    return RefResult(name, rec.ref if rec else "", rec.commit if rec else "", "removed")


def _has_commit(root: Path | str, sha: str) -> bool:
    return bool(sha) and subprocess.run(["git", "-C", str(root), "cat-file", "-e", f"{sha}^{{commit}}"],
                                        capture_output=True).returncode == 0
