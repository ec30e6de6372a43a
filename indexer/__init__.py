"""The write side of coderag: sources -> chunks -> embeddings -> Weaviate.

This module is the indexer's public interface; the bot imports only what is named here.
"""
from .config import Settings
from .embeddings import Embedder, make_embedder
from .errors import (BadInput, CoderagError, EmptyIndex, ModelMismatch, NotAGitRepository,
                     WeaviateUnavailable)
from .db import open_database
from .graph import CallGraph, Caller, DefinitionRef, is_test_path
from .graph.sql_store import graph_neighbours, indexed_repos, load_graph, repo_commit
from .pipeline import IndexSummary, index_repository
from .redact import install_log_redaction, redact_text, redact_url
from .store.weaviate_server import EmbeddedWeaviate
from .store.weaviate_store import ChunkStore, StoredChunk
# Issue 17: runbook <-> code drift and "who knows this" (reads; the hooks are in .knowledge).
from .drift.service import drift_counts, drift_report, format_drift, stale_in_section, stale_note
from .experts.service import (WhoResult, ask_line, experts_for_locations, format_who, owners_line,
                              who)
from .knowledge import on_docs_indexed, on_index_reset, on_repo_indexed, on_source_removed

__all__ = [
    "CallGraph", "Caller", "DefinitionRef", "graph_neighbours", "indexed_repos", "is_test_path", "load_graph", "repo_commit",
    "open_database", "BadInput", "ChunkStore", "CoderagError", "EmbeddedWeaviate", "Embedder", "EmptyIndex",
    "IndexSummary", "ModelMismatch", "NotAGitRepository", "Settings", "StoredChunk",
    "WeaviateUnavailable", "index_repository", "install_log_redaction", "make_embedder", "redact_text",
    "redact_url",
    "drift_counts", "drift_report", "format_drift", "stale_in_section", "stale_note",
    "WhoResult", "ask_line", "experts_for_locations", "format_who", "owners_line", "who",
    "on_docs_indexed", "on_index_reset", "on_repo_indexed", "on_source_removed",
]
