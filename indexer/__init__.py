"""The write side of coderag: sources -> chunks -> embeddings -> Weaviate.

This module is the indexer's public interface; the bot imports only what is named here.
"""
from .config import Settings
from .embeddings import Embedder, make_embedder
from .errors import (BadInput, CoderagError, EmptyIndex, ModelMismatch, NotAGitRepository,
                     WeaviateUnavailable)
from .db import open_database
from .documents import file_role
from .graph import CallGraph, Caller, DefinitionRef, is_test_path
from .graph.sql_store import graph_neighbours, indexed_repos, load_graph, repo_commit
from .pipeline import IndexSummary, index_repository
from .store.weaviate_server import EmbeddedWeaviate
from .store.weaviate_store import ChunkStore, StoredChunk

__all__ = [
    "CallGraph", "Caller", "DefinitionRef", "graph_neighbours", "indexed_repos", "is_test_path", "load_graph", "repo_commit",
    "file_role", "open_database", "BadInput", "ChunkStore", "CoderagError", "EmbeddedWeaviate", "Embedder", "EmptyIndex",
    "IndexSummary", "ModelMismatch", "NotAGitRepository", "Settings", "StoredChunk",
    "WeaviateUnavailable", "index_repository", "make_embedder",
]
