"""Typed records of the write side: what a source hands to the pipeline
(:class:`Document`, :class:`SourceBatch`) and what the index keeps per source
(:class:`SourceRecord`, stored in Weaviate's source collection and read by the bot).

Nothing here imports the rest of ``indexer``: sources, the pipeline and the store all
depend on these models, never the other way round.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Callable, Iterable

#: ``SourceRecord.kind`` values. ``git-ref``: a named ref (release tag, branch) of a Git
#: repository, indexed as an overlay of the repository's default branch
#: (:mod:`indexer.sources.refs`).
KIND_GIT = "git"
KIND_CONFLUENCE = "confluence"
KIND_GIT_REF = "git-ref"

#: ``SourceBatch.replace``: how a run's chunks replace the source's older ones.
#: ``all``: every chunk of the source not written by this run is deleted (a full index);
#: ``paths``: only the chunks of the batch's documents and ``replaced_paths`` are replaced
#: (an incremental push, a Confluence sync).
REPLACE_ALL = "all"
REPLACE_PATHS = "paths"

#: ``SourceBatch.graph``: what happens to the SQL call graph.
GRAPH_REPO = "repo"      # replace the whole repo's graph (full index)
GRAPH_FILES = "files"    # replace the rows of the touched files only (incremental)
GRAPH_NONE = "none"      # no call graph (Confluence pages)


# ``vector_state`` of a chunk object (indexer.store.schema): has its vector, keyword-only
# by the embedding policy, or waiting for phase 2 of a first index (indexer.pipeline).
VECTOR_OK, VECTOR_NONE, VECTOR_PENDING = "", "none", "pending"


def vectors_percent(record) -> int | None:
    """For a :class:`SourceRecord` or a status row (a dict with ``chunks``,
    ``keyword_only``, ``vectors_pending``): the percent (0-99, rounded down) of the chunks
    meant to have a vector that have one, or ``None`` when none is pending."""
    def field_of(key: str) -> int:
        value = record.get(key) if isinstance(record, dict) else getattr(record, key, 0)
        return int(value or 0)

    pending = field_of("vectors_pending")
    if pending <= 0:
        return None
    meant = max(field_of("chunks") - field_of("keyword_only"), pending)
    return min(99, int(100 * (meant - pending) / meant))


@dataclass(frozen=True)
class SourceRecord:
    """One indexed source (a Git repo or a Confluence space), as the index keeps it.

    ``commit``: the indexed Git commit (40 hex; ``""`` for Confluence);
    ``indexed_at``: end of the last successful run (UTC); ``model`` and ``dimensions``:
    the embedding model and vector length of its chunks; ``files``: distinct paths with
    at least one chunk; ``chunks``: chunk count; ``url_template``: how citations link to
    the source (``{commit}``, ``{path}``, ``{start}``, ``{end}``; ``""`` = no link);
    ``skipped``: files not indexed, by reason (``too_large``: 3, ...).

    A ref source (``kind="git-ref"``, named ``<base>@<ref>``) is an overlay of the source
    ``base``: ``ref`` is the tag or branch name, ``commit`` the ref's commit, and
    ``differs`` the paths whose content differs between that commit and the base's
    committed one (or that only one of them has). Readers at the ref see the base's
    chunks of every other path and this source's chunks of ``differs``
    (:func:`indexer.store.versions.ref_filter`). These three fields are left out of
    :meth:`to_dict` for every other source.
    """

    name: str
    kind: str = KIND_GIT
    root: str = ""
    commit: str = ""
    indexed_at: datetime | None = None
    model: str = ""
    dimensions: int = 0
    files: int = 0
    chunks: int = 0
    url_template: str = ""
    skipped: dict[str, int] = field(default_factory=dict)
    # The committed run (indexer.store.versions): readers see generations
    # run_floor..run_gen, minus older copies of ``replaced`` paths while a clean-up is due.
    run_gen: int = 0
    run_floor: int = 0
    run_id: str = ""
    replaced: list[str] = field(default_factory=list)
    # Vectors (searchable early): ``vectors_pending``: committed chunks still waiting for their
    # vector (a first index is searchable by keyword before its vectors are done);
    # ``keyword_only``: chunks the embedding policy (``embedding_policy``, its name) gives
    # no vector on purpose. Both counted at commit, see indexer.store.versions.
    vectors_pending: int = 0
    keyword_only: int = 0
    embedding_policy: str = ""
    # A ref source (kind "git-ref"): its base source, the ref's name, the differing paths.
    base: str = ""
    ref: str = ""
    differs: list[str] = field(default_factory=list)
    # Set on read when a stored field does not decode (see indexer.store.records): what is
    # wrong; "" for a sound record.
    damaged: str = ""

    def vectors_percent(self) -> int | None:
        """Percent of the chunks meant to have a vector that have one, while some are
        pending (``None`` once complete): what "vectors 40% done" shows."""
        return vectors_percent(self)

    @property
    def is_ref(self) -> bool:
        """True for a ref source (an overlay of ``base``)."""
        return bool(self.base)

    def to_dict(self) -> dict:
        """Plain dict (``indexed_at`` kept as a datetime), e.g. for JSON output; the ref
        fields (``base``, ``ref``, ``differs``) only for a ref source."""
        d = asdict(self)
        if not self.base:
            for k in ("base", "ref", "differs"):
                d.pop(k)
        return d

    @classmethod
    def from_properties(cls, props: dict) -> "SourceRecord":
        """From the stored object's properties (unknown keys ignored, missing ones default)."""
        known = {k: props[k] for k in cls.__dataclass_fields__ if k in props and props[k] is not None}
        for k in ("dimensions", "files", "chunks", "run_gen", "run_floor", "vectors_pending", "keyword_only"):
            if k in known:
                known[k] = int(known[k])
        return cls(**known)


@dataclass(frozen=True)
class Document:
    """One file or page, as a source yields it: a path unique within the source
    (repo-relative, ``/``-separated; Confluence: ``confluence/<space>/<id>-<slug>.md``),
    its decoded text, and the version label written into its chunks' ``commit``
    (a Git commit SHA, or ``v<page version>``). ``title``/``url``: a page's title and web
    address (Confluence; empty for files)."""

    path: str
    text: str
    version: str
    title: str = ""
    url: str = ""


#: Why a file was not indexed (:class:`Skips` counts them by reason).
SKIP_BINARY = "binary"
SKIP_VENDORED = "vendored"
SKIP_GENERATED = "generated"
SKIP_TOO_LARGE = "too_large"
SKIP_UNREADABLE = "unreadable"
SKIP_SYMLINK = "symlink"  # never followed: the target may be outside the repo or a loop
SKIP_REASONS = (SKIP_BINARY, SKIP_VENDORED, SKIP_GENERATED, SKIP_TOO_LARGE, SKIP_UNREADABLE, SKIP_SYMLINK)


@dataclass
class Skips:
    """Files a source or the pipeline did not index, by reason, with one example path each."""

    counts: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, reason: str, path: str) -> None:
        self.counts[reason] += 1
        self.examples.setdefault(reason, path)


@dataclass
class SourceBatch:
    """What one run of one source hands to :class:`indexer.pipeline.IndexingPipeline`.

    ``documents`` may be a generator (read lazily; ``document_count`` sizes the progress
    bar when known). ``replaced_paths`` (with ``replace=REPLACE_PATHS``): paths whose older
    chunks and call-graph rows go, whether or not a document replaces them (changed,
    deleted, renamed-away or now-skipped files; changed, renamed or deleted pages); the
    documents' own paths are always replaced. ``deleted_paths``: those of ``replaced_paths``
    that left the source (deleted files, renamed-away paths, removed pages; the pipeline's
    subscribers are told the rest changed). ``state_*``: what is recorded in
    the SQL sync state after a successful run (``mode``: ``full``, ``incremental``,
    ``reconcile``; ``cursor``: the Confluence listing cursor). ``after_commit``: extra
    writes of the source (the Confluence page table), run once the run is committed (the
    source record saved, :mod:`indexer.store.versions`) and before the sync state is saved,
    so a crash before them makes the next run redo the same work.
    """

    name: str
    kind: str
    root: str
    commit: str
    documents: Iterable[Document]
    replace: str = REPLACE_ALL
    graph: str = GRAPH_REPO
    replaced_paths: frozenset[str] | set[str] = frozenset()
    deleted_paths: frozenset[str] | set[str] = frozenset()
    url_template: str = ""
    skips: Skips = field(default_factory=Skips)
    document_count: int | None = None
    state_mode: str = "full"
    state_cursor: datetime | None = None
    state_reconciled: bool = False
    after_commit: Callable[[], None] | None = None
    # A ref source (kind "git-ref", see SourceRecord): its base source and ref name, and
    # the paths that differ from the base. Only documents at ``differs`` are chunked and
    # written; the others are read for the call graph only (a ref's graph is whole).
    base: str = ""
    ref: str = ""
    differs: frozenset[str] | set[str] = frozenset()
