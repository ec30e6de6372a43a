"""``store.runs``: the versioned write protocol (see :mod:`indexer.store.versions`)."""
from __future__ import annotations

from typing import Iterable

from ..models import SourceRecord
from . import versions
from .versions import IndexRun


class RunsNamespace:
    """``store.runs``: begin, verify, commit and clean up one run of one source."""

    def __init__(self, store):
        self._store = store  # the ChunkStore: versions works through its namespaces

    def begin(self, source: str, mode: str = "full") -> IndexRun:
        """Start a run of ``source`` (``mode`` ``"full"`` or ``"incremental"``, else
        ``ValueError``): finishes the clean-up a crash may have left, returns the
        :class:`IndexRun` to write with (``store.data.write_chunks(rows, run=run)``)."""
        return versions.begin_run(self._store, source, mode)

    def verify(self, run: IndexRun) -> dict:
        """Count ``run``'s objects and check their vectors (repairing missing ones);
        returns ``{"objects", "found", "missing_vectors", "repaired_vectors"}``; raises
        :class:`~indexer.store.versions.IndexIncomplete`. See :func:`versions.verify_run`."""
        return versions.verify_run(self._store, run)

    def commit(self, run: IndexRun, record: SourceRecord, *, count_files: bool = False) -> SourceRecord:
        """Switch readers to ``run`` by writing the source ``record`` (``chunks`` counted,
        and ``files`` when ``count_files``); returns the record as saved. See
        :func:`versions.commit_run` for the errors."""
        return versions.commit_run(self._store, run, record, count_files=count_files)

    def cleanup(self, run: IndexRun) -> int:
        """Delete what the committed run superseded; returns how many objects
        (``ValueError`` before :meth:`commit`)."""
        return versions.cleanup_run(self._store, run)

    def cleanup_source(self, record: SourceRecord) -> int:
        """Delete what the committed ``record`` hides (a clean-up a crash left undone);
        returns how many objects."""
        return versions.cleanup(self._store, record)

    def missing_vectors(self, ids: Iterable[str], dimensions: int = 0) -> list[str]:
        """The ids among ``ids`` whose object is not in the vector index (absent ones
        included); see :func:`versions.missing_vectors`."""
        return versions.missing_vectors(self._store, ids, dimensions)

    def reinsert_with_vectors(self, ids: list[str], embedder=None) -> tuple[int, list[str]]:
        """Put the objects ``ids`` back into the vector index; returns ``(re-inserted, ids
        that could not be given a vector)``. See :func:`versions.reinsert_with_vectors`."""
        return versions.reinsert_with_vectors(self._store, ids, embedder)
