"""``store.data``: the writes and deletes of chunk objects."""
from __future__ import annotations

from typing import Iterable, Sequence

from weaviate.classes.query import Filter
from weaviate.exceptions import WeaviateBaseError
from weaviate.util import generate_uuid5

from common.errors import WeaviateUnavailable
from .connection import Collections, short
from .faults import fault_point
from .repo_lock import check_fence
from .versions import IndexRun

WRITE_BATCH_SIZE = 200


def chunk_uuid(repo: str, path: str, start_line: int, content_hash: str, gen: int | None = None) -> str:
    """Deterministic id of a chunk in run generation ``gen`` (see :mod:`.versions`): a run
    never overwrites an object of another run, and a chunk written twice by one run is
    one object. ``gen=None``: the id scheme of unversioned writes."""
    key = f"{repo}\0{path}\0{start_line}\0{content_hash}"
    return generate_uuid5(key if gen is None else f"{key}\0{gen}")


class DataNamespace:
    """``store.data``: chunk objects written, rewritten and deleted."""

    def __init__(self, cols: Collections, sources):
        self._cols = cols
        self._sources = sources  # the SourcesNamespace: delete_repo drops the record too

    def write_chunks(self, rows: Iterable[tuple[dict, list[float]]], run: IndexRun | None = None) -> int:
        """Upsert ``(properties, vector)`` rows, ``WRITE_BATCH_SIZE`` objects per synchronous
        ``insert_many`` request (ids from :func:`chunk_uuid`, so a rewrite replaces the
        object); returns how many were written. ``rows`` may be a generator: it is consumed
        lazily, so embedding and writing interleave.

        Synchronous on purpose: the client's background batcher re-queues objects it could
        not send and can wait forever in ``flush`` when a replica is gone; here every
        request either succeeds or raises. Raises :class:`WeaviateUnavailable` if Weaviate
        rejects any object or cannot be reached; ``ValueError`` for a row of another
        source than ``run``'s.

        ``run`` (from ``store.runs.begin``): the rows become objects of that run (its
        ``run_gen``/``run_id`` and run-specific ids), invisible to readers until
        ``store.runs.commit``; the run remembers the ids for ``store.runs.verify``.
        Without a run: unversioned upserts (kept for old callers; readers see them only
        for sources whose record predates versioning).
        """
        written, objs, batches = 0, [], 0
        for p, v in rows:
            gen = None
            if run is not None:
                if run.source != p["repo"]:
                    raise ValueError(f"chunk of {p['repo']!r} written to a run of {run.source!r}")
                p = dict(p, run_gen=run.gen, run_id=run.run_id)
                gen = run.gen
                run.dimensions = run.dimensions or len(v or [])
            uid = chunk_uuid(p["repo"], p["path"], p["start_line"], p["content_hash"], gen)
            if run is not None:
                run.ids.add(uid)
                if not v:  # keyword-only by the embedding policy: no vector to verify
                    run.vectorless.add(uid)
            objs.append((uid, p, v))
            if len(objs) >= WRITE_BATCH_SIZE:
                if run is not None:
                    check_fence(run.source)  # a run that lost its lock stops writing
                written += self.insert(objs)
                objs, batches = [], batches + 1
                fault_point("write_batch", batch=batches, objects=written)
        if objs:
            written += self.insert(objs)
            fault_point("write_batch", batch=batches + 1, objects=written)
        return written

    def insert(self, objects: Sequence[tuple[str, dict, list[float] | None]]) -> int:
        """Insert (or overwrite, same id) the objects ``(uuid, properties, vector)`` as they
        are, in one synchronous request: no id scheme, no run fields added (what
        :meth:`write_chunks` does per batch, and what rewrites of existing objects, such
        as giving keyword-ready chunks their vectors, use). Returns how many.

        Raises :class:`WeaviateUnavailable` if Weaviate rejects any object or cannot be
        reached."""
        from weaviate.classes.data import DataObject

        objs = [DataObject(uuid=u, properties=p, vector=v) for u, p, v in objects]
        if not objs:
            return 0
        try:
            res = self._cols.chunks.data.insert_many(objs)
        except WeaviateBaseError as exc:
            raise WeaviateUnavailable(f"Weaviate rejected chunks: {short(exc)}") from None
        if res.errors:
            first = next(iter(res.errors.values()))
            raise WeaviateUnavailable(f"Weaviate rejected {len(res.errors)} chunks: {str(first.message)[:200]}")
        return len(objs)

    def delete_where(self, flt) -> int:
        """Delete every chunk object matching the Weaviate filter ``flt``; returns how many.
        ``delete_many`` until nothing matches: one call removes at most
        QUERY_MAXIMUM_RESULTS (10,000 by default) objects. Weaviate errors propagate
        (``WeaviateBaseError``)."""
        deleted = 0
        while True:
            res = self._cols.chunks.data.delete_many(where=flt)
            deleted += int(res.successful)
            if int(res.matches) < 10000 or not int(res.successful):
                return deleted

    def delete_ids(self, ids: Sequence[str]) -> int:
        """Delete the chunk objects with these ids (a filtered delete); returns how many."""
        return self.delete_where(Filter.by_id().contains_any(list(ids))) if ids else 0

    def delete_by_id_if_exists(self, uid: str) -> bool:
        """Delete one object by key, not through the inverted index (after a crash an
        object can be missing there); returns whether it existed."""
        if not self._cols.chunks.data.exists(uid):
            return False
        self._cols.chunks.data.delete_by_id(uid)
        return True

    def delete_stale(self, repo: str, run_id: str) -> int:  # unversioned writes only
        """Delete ``repo``'s chunks written by any run but ``run_id``; returns how many."""
        flt = Filter.by_property("repo").equal(repo) & Filter.by_property("run_id").not_equal(run_id)
        return self.delete_where(flt)

    def delete_paths(self, repo: str, paths: Iterable[str], keep_run_id: str | None = None) -> int:
        """Delete ``repo``'s chunks whose ``path`` is one of ``paths`` (except those written
        by run ``keep_run_id``, when given: the fresh copies of re-indexed files); returns
        how many."""
        paths = sorted(set(paths))
        deleted = 0
        for i in range(0, len(paths), 200):
            flt = Filter.by_property("repo").equal(repo) & Filter.by_property("path").contains_any(paths[i:i + 200])
            if keep_run_id:
                flt = flt & Filter.by_property("run_id").not_equal(keep_run_id)
            deleted += self.delete_where(flt)
        return deleted

    def delete_repo(self, repo: str) -> None:
        """Remove every chunk and the source record of ``repo``."""
        self.delete_where(Filter.by_property("repo").equal(repo))
        self._sources.delete(repo)
