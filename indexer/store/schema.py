"""The Weaviate collections coderag writes, and how their properties are tokenised.

``CodeChunk`` holds every chunk of every source, vectors self-provided (we embed), cosine
distance. Properties that only filter use ``field`` tokenisation and are left out of BM25;
the searchable ones use ``word`` tokenisation and are what hybrid search's keyword half
scores (with the weights in :data:`KEYWORD_PROPERTIES`).

``CoderagSource`` holds one object per indexed repository or space: its commit, when it
was indexed, the embedding model and counts.
"""
from __future__ import annotations

from weaviate.classes.config import Configure, DataType, Property, Tokenization, VectorDistances

from .records import SOURCE_COLLECTION  # noqa: F401  (defined where the REST reader needs it)

CHUNK_COLLECTION = "CodeChunk"


def _field(name: str, dtype: DataType = DataType.TEXT) -> Property:
    if dtype == DataType.TEXT:
        return Property(name=name, data_type=dtype, tokenization=Tokenization.FIELD,
                        index_searchable=False, index_filterable=True)
    return Property(name=name, data_type=dtype, index_filterable=True)


def _searchable(name: str) -> Property:
    return Property(name=name, data_type=DataType.TEXT, tokenization=Tokenization.WORD,
                    index_searchable=True, index_filterable=False)


CHUNK_PROPERTIES = [
    _field("repo"), _field("path"), _field("language"), _field("symbol"), _field("kind"),
    _field("start_line", DataType.INT), _field("end_line", DataType.INT),
    _field("commit"), _field("indexed_at", DataType.DATE), _field("content_hash"),
    _field("run_id"),
    # Generation of the run that wrote the chunk (indexer.store.versions): readers only see
    # the generations the source record has committed.
    _field("run_gen", DataType.INT),
    # Last dotted part of the symbol, lower-cased: the exact-name boost matches on it.
    _field("name_lower"),
    # code / test / docs / changelog / example (indexer.documents.file_role): a ranking prior.
    _field("role"),
    # "" (has its vector), "none" (keyword-only by the embedding policy), "pending" (a
    # first index committed it keyword-ready; its vector comes in phase 2): verify_run and
    # doctor treat the last two as recorded states, not as missing vectors.
    _field("vector_state"),
    # Searchable text for BM25.
    _searchable("content"),  # context line + chunk source
    _searchable("identifiers"),  # camelCase/snake_case identifiers split into words
    _searchable("symbol_terms"),  # the symbol, split into words
    _searchable("path_terms"),  # the path, split into words
]

SOURCE_PROPERTIES = [
    _field("name"), _field("kind"), _field("root"), _field("commit"),
    _field("indexed_at", DataType.DATE), _field("model"), _field("dimensions", DataType.INT),
    _field("files", DataType.INT), _field("chunks", DataType.INT), _field("url_template"),
    Property(name="skipped_json", data_type=DataType.TEXT, index_searchable=False,
             index_filterable=False),
    # The committed version (indexer.store.versions): generation, floor, run id, and the
    # paths whose older copies are hidden until the clean-up has deleted them.
    _field("run_gen", DataType.INT), _field("run_floor", DataType.INT), _field("run_id"),
    Property(name="replaced_json", data_type=DataType.TEXT, index_searchable=False,
             index_filterable=False),
    # Vector completeness of the committed version (indexer.models.SourceRecord).
    _field("vectors_pending", DataType.INT), _field("keyword_only", DataType.INT), _field("embedding_policy"),
    # A ref source (indexer.sources.refs): its base source, the ref's name, and the paths
    # that differ from the base (JSON list), which readers at the ref take from it.
    _field("base"), _field("ref"),
    Property(name="differs_json", data_type=DataType.TEXT, index_searchable=False,
             index_filterable=False),
]

# BM25 property weights for the keyword half of hybrid search. Symbol names and split
# identifiers carry more signal per token than body text; tuned on the dev set
# (see docs/benchmarks.md, "Retrieval quality").
KEYWORD_PROPERTIES = ["content", "identifiers", "symbol_terms^3", "path_terms^2"]


def _replication(factor: int) -> dict:
    """``replication_config`` kwargs for a factor > 1 (none for 1: Weaviate's default).

    Raises ``ValueError`` for a factor < 1. Weaviate itself rejects a factor larger than
    the number of nodes when the collection is created.
    """
    if factor < 1:
        raise ValueError(f"replication factor must be >= 1, got {factor}")
    if factor == 1:
        return {}
    # Weaviate >= 1.38 runs async replication for every collection with factor > 1: a
    # replica that was down is brought up to date in the background (hash-tree
    # comparison), without waiting for reads to repair it.
    return {"replication_config": Configure.replication(factor=factor)}


def chunk_collection_config(replication_factor: int = 1) -> dict:
    """Keyword arguments for ``client.collections.create`` of :data:`CHUNK_COLLECTION`.

    ``replication_factor``: copies of each shard across the cluster's nodes
    (``CODERAG_REPLICATION_FACTOR``; 1 on a single node, 3 on the Helm chart's 3 nodes).
    """
    return dict(
        name=CHUNK_COLLECTION,
        properties=CHUNK_PROPERTIES,
        vector_config=Configure.Vectors.self_provided(
            vector_index_config=Configure.VectorIndex.hnsw(distance_metric=VectorDistances.COSINE)),
        inverted_index_config=Configure.inverted_index(index_timestamps=False),
        **_replication(replication_factor),
    )


def source_collection_config(replication_factor: int = 1) -> dict:
    """Keyword arguments for ``client.collections.create`` of :data:`SOURCE_COLLECTION`
    (replicated like the chunks, so that status and freshness survive a node loss)."""
    return dict(name=SOURCE_COLLECTION, properties=SOURCE_PROPERTIES,
                vector_config=Configure.Vectors.self_provided(), **_replication(replication_factor))
