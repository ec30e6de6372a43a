"""What the read side needs from the index: chunks as stored, the call graph, the
knowledge reads (runbook drift, who knows this, what changed) and the question's embedder type.

The bot's answering modules (retrieval, ranking, answers, chat front ends, impact)
import the indexer through this module only; use cases (index, sync, remove, status,
workers) and the pieces a composition root builds are in :mod:`indexer` itself. Names
are imported on first use, so reading the call graph never loads Weaviate or a model.
"""
from typing import TYPE_CHECKING

from .lazy import lazy_names

_WHERE = {
    ".documents": ("file_role",),
    ".embeddings": ("Embedder",),
    ".graph": ("CallGraph", "Caller", "DefinitionRef", "is_test_path"),
    ".graph.sql_store": ("graph_links", "graph_neighbours", "indexed_repos", "load_graph", "repo_commit"),
    ".models": ("SourceRecord", "vectors_percent"),
    # Named refs (release tags, branches) in the SQL state: {source name: commit}.
    ".store.sync_state": ("ref_problems", "ref_sources"),
    ".store.weaviate_store": ("ChunkReader", "StoredChunk"),
    # Runbook <-> code drift and "who knows this".
    ".drift.counts": ("drift_counts",),
    ".drift.service": ("drift_report", "knowledge_repos", "stale_in_section"),
    # What changed: commits and changed functions read from the repository's history.
    ".history": ("CHANGE_WORDS", "ChangesReport", "asks_what_changed", "parse_since", "question_since"),
    ".changes": ("changes_report",),
    ".experts.service": ("WhoResult", "closest_paths", "closest_symbols", "experts_for_locations", "looks_like_path",
                         "owners_line", "who"),
}
__getattr__, __dir__ = lazy_names(__package__, globals(), _WHERE)

if TYPE_CHECKING:  # for type checkers and readers: the same names, eagerly
    from .documents import file_role
    from .drift.counts import drift_counts
    from .drift.service import drift_report, knowledge_repos, stale_in_section
    from .embeddings import Embedder
    from .changes import changes_report
    from .history import CHANGE_WORDS, ChangesReport, asks_what_changed, parse_since, question_since
    from .experts.service import (WhoResult, closest_paths, closest_symbols, experts_for_locations, looks_like_path,
                                  owners_line, who)
    from .graph import CallGraph, Caller, DefinitionRef, is_test_path
    from .graph.sql_store import graph_links, graph_neighbours, indexed_repos, load_graph, repo_commit
    from .models import SourceRecord, vectors_percent
    from .store.sync_state import ref_problems, ref_sources
    from .store.weaviate_store import ChunkReader, StoredChunk

#: The public names: exactly those ``__getattr__`` can import.
__all__ = [name for names in _WHERE.values() for name in names]
