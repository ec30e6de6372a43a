"""The write side of coderag: sources -> one indexing pipeline -> Weaviate + SQL.

This module is the indexer's public interface: ``bot`` imports only what is named here
(and the shared package ``common``); the import-linter contracts in ``.importlinter``
enforce it. Write-side use cases are in :mod:`indexer.operations`; the read interface of
the index is :class:`ChunkReader` (implemented by :class:`ChunkStore`).
"""
from importlib import import_module
from typing import TYPE_CHECKING

# Names are imported on first use (PEP 562 module ``__getattr__``): a command that needs
# only the call graph never pays for the Weaviate client, torch or ONNX Runtime at start-up.
_WHERE = {
    ".embeddings": ("Embedder", "make_embedder"),
    ".freshness.jobs": ("current_runtime",),
    ".freshness.runtime": ("FreshnessRuntime",),
    ".freshness.webhooks": ("webhook_routes",),
    ".documents": ("file_role",),
    ".graph": ("CallGraph", "Caller", "DefinitionRef", "is_test_path"),
    ".graph.sql_store": ("graph_links", "graph_neighbours", "indexed_repos", "load_graph", "repo_commit"),
    ".models": ("SourceRecord", "vectors_percent"),
    ".operations": ("index_path", "index_repository", "index_status", "open_store", "queue_status",
                    "reindex_recorded", "remove_source", "reset_index", "retry_failed_jobs", "run_index_worker",
                    "sync_confluence_now", "sync_repo_now"),
    ".pipeline": ("IndexingPipeline",),
    ".sources.repository": ("IndexSummary",),
    ".freshness.scheduler_state": ("scheduler_state",),
    ".store.doctor": ("SourceHealth", "check_index", "repair_index"),
    ".store.weaviate_server": ("EmbeddedWeaviate",),
    ".store.weaviate_store": ("ChunkReader", "ChunkStore", "ChunkWriter", "StoredChunk"),
    # Runbook <-> code drift and "who knows this" (reads; the hooks are in .knowledge).
    ".drift.counts": ("drift_counts",),
    ".drift.service": ("drift_report", "knowledge_repos", "stale_in_section"),
    ".experts.service": ("WhoResult", "closest_paths", "closest_symbols", "experts_for_locations", "looks_like_path",
                         "owners_line", "who"),
    ".knowledge": ("on_docs_indexed", "on_index_reset", "on_repo_indexed", "on_source_removed"),
}
#: Public names whose attribute in their module has another name.
_RENAMED = {"current_runtime": "current"}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}


def __getattr__(name: str):
    """Import a public name's module on first use and cache the name here."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'indexer' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), _RENAMED.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))


if TYPE_CHECKING:  # for type checkers and readers: the same names, eagerly
    from .embeddings import Embedder, make_embedder
    from .freshness.jobs import current as current_runtime
    from .freshness.runtime import FreshnessRuntime
    from .freshness.webhooks import webhook_routes
    from .documents import file_role
    from .graph import CallGraph, Caller, DefinitionRef, is_test_path
    from .graph.sql_store import graph_links, graph_neighbours, indexed_repos, load_graph, repo_commit
    from .models import SourceRecord, vectors_percent
    from .operations import (index_path, index_repository, index_status, open_store, queue_status,
                             reindex_recorded, remove_source, reset_index, retry_failed_jobs, run_index_worker,
                             sync_confluence_now, sync_repo_now)
    from .pipeline import IndexingPipeline
    from .sources.repository import IndexSummary
    from .freshness.scheduler_state import scheduler_state
    from .store.doctor import SourceHealth, check_index, repair_index
    from .store.weaviate_server import EmbeddedWeaviate
    from .store.weaviate_store import ChunkReader, ChunkStore, ChunkWriter, StoredChunk
    # Runbook <-> code drift and "who knows this" (reads; the hooks are in .knowledge).
    from .drift.counts import drift_counts
    from .drift.service import drift_report, knowledge_repos, stale_in_section
    from .experts.service import (WhoResult, closest_paths, closest_symbols, experts_for_locations, looks_like_path,
                                  owners_line, who)
    from .knowledge import on_docs_indexed, on_index_reset, on_repo_indexed, on_source_removed

#: The public names: exactly those :func:`__getattr__` can import.
__all__ = list(_MODULE_OF)
