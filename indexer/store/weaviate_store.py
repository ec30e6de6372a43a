"""The index's public interface: :class:`ChunkStore`, Weaviate's chunks and source records
behind per-concern namespaces (as the Weaviate client's ``collection.query`` and
``collection.data``):

* ``store.schema`` (:mod:`.connection`): create, upgrade and drop the collections;
  readiness;
* ``store.query`` (:mod:`.query`): searches, look-ups by symbol or id, counts, the
  filter of what readers see;
* ``store.data`` (:mod:`.data`): chunk writes, rewrites and deletes;
* ``store.runs`` (:mod:`.runs`): the versioned write protocol (:mod:`.versions`);
* ``store.sources`` (:mod:`.sources`): the :class:`~indexer.models.SourceRecord` of each
  source, and the embedding-model guard.

Only modules of :mod:`indexer.store` touch a Weaviate collection or a private of the store
(``tests/unit/test_store_boundary.py``). The bot reads the index through :class:`ChunkReader`
(``query`` and ``sources``); the indexer writes through :class:`ChunkWriter`.
"""
from __future__ import annotations

import logging
import uuid
from datetime import datetime, timezone
from typing import Protocol

import weaviate

from common.redact import redact_url
from common.settings import Settings
from .connection import Collections, SchemaNamespace, connect, http_url
from .data import WRITE_BATCH_SIZE, DataNamespace, chunk_uuid  # noqa: F401  (re-exported)
from .query import RESULT_PROPERTIES, QueryNamespace, StoredChunk, StoredObject  # noqa: F401  (re-exported)
from .runs import RunsNamespace
from .sources import SourcesNamespace
from .versions import IndexIncomplete, IndexRun  # noqa: F401  (re-exported)
from .weaviate_server import is_ready

log = logging.getLogger(__name__)


class ChunkReader(Protocol):
    """The read interface of the index: all the bot (retrieval, answers, health) uses.
    :class:`ChunkStore` implements it: ``query.hybrid``/``keyword``/``by_symbol``/
    ``visible_filter``/``count``/``count_files`` and ``sources.all``/``get``."""

    query: QueryNamespace
    sources: SourcesNamespace


class ChunkWriter(ChunkReader, Protocol):
    """The write interface of the index: what the indexing pipeline and the write-side
    use cases (:mod:`indexer.operations`) call. :class:`ChunkStore` implements it."""

    schema: SchemaNamespace
    data: DataNamespace
    runs: RunsNamespace


class ChunkStore:
    """The chunk and source collections on one Weaviate connection, as the namespaces
    ``schema``, ``query``, ``data``, ``runs`` and ``sources`` (implements
    :class:`ChunkReader` and :class:`ChunkWriter`). Use as a context manager."""

    def __init__(self, client: weaviate.WeaviateClient, *, replication_factor: int = 1):
        """``replication_factor``: used only when this store creates the collections
        (``CODERAG_REPLICATION_FACTOR``); existing collections keep theirs. Call
        ``schema.ensure()`` (done by :meth:`open`) before any other namespace."""
        self._cols = Collections(client, replication_factor)
        self._settings: Settings | None = None  # set by open(): lets reconnect_if_down() redial
        self._url = ""
        self.schema = SchemaNamespace(self._cols)
        self.sources = SourcesNamespace(self._cols)
        self.query = QueryNamespace(self._cols, self.sources)
        self.data = DataNamespace(self._cols, self.sources)
        self.runs = RunsNamespace(self)

    @classmethod
    def open(cls, settings: Settings) -> "ChunkStore":
        """Connect (starting the embedded server if needed) and create missing collections.
        Raises :class:`WeaviateUnavailable` when Weaviate cannot be reached or set up."""
        from common.errors import WeaviateUnavailable

        store = cls(connect(settings), replication_factor=settings.replication_factor)
        store._settings = settings
        store._url = http_url(settings)
        try:
            store.schema.prepare()
        except WeaviateUnavailable:
            store.close()
            raise
        return store

    def reconnect_if_down(self) -> bool:
        """For long-running processes: if Weaviate does not answer on this connection,
        connect again (for the embedded server: to the ports it runs on now, starting it
        if needed) and swap the new client in; returns True when it reconnected.

        Only stores made by :meth:`open` know how to reconnect (others return False).
        Raises :class:`WeaviateUnavailable` when the new connection fails too."""
        if self._settings is None:
            return False
        # A plain readiness probe with a 2 s timeout: the client's own call waits out its
        # query timeout when something else now listens on the old port.
        if self._url and is_ready(self._url):
            return False
        old = self._cols.swap_client(connect(self._settings))
        self.schema.prepare()
        try:
            old.close()
        except Exception:  # noqa: BLE001 - the old connection is dead anyway
            pass
        self._url = http_url(self._settings)
        log.warning("reconnected to Weaviate at %s", redact_url(self._url))
        return True

    def __enter__(self) -> "ChunkStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the Weaviate connection."""
        self._cols.client.close()


def new_run_id() -> str:
    """A fresh id for one indexing run (marks the chunks it wrote)."""
    return uuid.uuid4().hex


def utcnow() -> datetime:
    """The current time, UTC-aware."""
    return datetime.now(timezone.utc)
