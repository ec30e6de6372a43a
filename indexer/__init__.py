"""The write side of coderag: sources -> one indexing pipeline -> Weaviate + SQL.

The indexer's public interface is two modules: this one (the use cases of
:mod:`indexer.operations` and the pieces a composition root builds: the store, the
embedder, the freshness runtime, the pipeline) and :mod:`indexer.read` (what answering a
question reads: chunks, the call graph, drift and who-knows-this). ``bot`` imports
nothing else of the indexer, and its answering modules only :mod:`indexer.read`; the
import-linter contracts in ``.importlinter`` and ``tests`` enforce it.
"""
from typing import TYPE_CHECKING

from .lazy import lazy_names

_WHERE = {
    ".embeddings": ("make_embedder",),
    ".freshness.jobs": ("current_runtime",),
    ".freshness.runtime": ("FreshnessRuntime",),
    ".freshness.scheduler_state": ("scheduler_state",),
    ".freshness.webhooks": ("webhook_routes",),
    ".operations": ("check_worker_setup", "check_worker_timing", "index_path", "index_repository", "index_status",
                    "open_store", "queue_status", "queue_status_reader", "reindex_recorded", "remove_source",
                    "require_queue_extra", "reset_index", "retry_failed_jobs", "run_index_worker",
                    "sync_all_now", "sync_confluence_now", "sync_repo_now", "wait_for_queue_database"),
    ".pipeline": ("IndexingPipeline",),
    ".sources.repository": ("IndexSummary",),
    ".store.doctor": ("SourceHealth", "check_index", "repair_index"),
    ".store.weaviate_server": ("EmbeddedWeaviate",),
    ".store.weaviate_store": ("ChunkStore", "ChunkWriter"),
    # The hooks that keep drift and who-knows-this current (subscribers of the pipeline).
    ".knowledge": ("on_docs_indexed", "on_index_reset", "on_repo_indexed", "on_source_removed"),
}
#: Public names whose attribute in their module has another name.
_RENAMED = {"current_runtime": "current"}
__getattr__, __dir__ = lazy_names(__package__, globals(), _WHERE, _RENAMED)

if TYPE_CHECKING:  # for type checkers and readers: the same names, eagerly
    from .embeddings import make_embedder
    from .freshness.jobs import current as current_runtime
    from .freshness.runtime import FreshnessRuntime
    from .freshness.scheduler_state import scheduler_state
    from .freshness.webhooks import webhook_routes
    from .knowledge import on_docs_indexed, on_index_reset, on_repo_indexed, on_source_removed
    from .operations import (check_worker_setup, check_worker_timing, index_path, index_repository, index_status,
                             open_store, queue_status, queue_status_reader, reindex_recorded, remove_source,
                             require_queue_extra, reset_index, retry_failed_jobs, run_index_worker,
                             sync_all_now, sync_confluence_now, sync_repo_now, wait_for_queue_database)
    from .pipeline import IndexingPipeline
    from .sources.repository import IndexSummary
    from .store.doctor import SourceHealth, check_index, repair_index
    from .store.weaviate_server import EmbeddedWeaviate
    from .store.weaviate_store import ChunkStore, ChunkWriter

#: The public names: exactly those :func:`__getattr__` can import.
__all__ = [name for names in _WHERE.values() for name in names]
