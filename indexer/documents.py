"""How a :class:`Chunk` becomes a Weaviate object and an embedding input.

Kept in one place so that indexing and re-indexing (webhooks, Confluence) agree.
"""
from __future__ import annotations

import re
from datetime import datetime

from .chunking.models import Chunk
from .identifiers import identifier_parts, split_identifier

_PATH_SPLIT = re.compile(r"[/\\._\-]+")


def path_terms(path: str) -> str:
    """``src/requests/sessions.py`` -> ``src requests sessions py`` (camelCase split too)."""
    words: list[str] = []
    for piece in _PATH_SPLIT.split(path):
        if piece:
            words.extend(split_identifier(piece) or [piece.lower()])
    return " ".join(words)


def symbol_terms(symbol: str) -> str:
    """``SessionRedirectMixin.rebuild_auth`` -> ``session redirect mixin rebuild auth``."""
    words: list[str] = []
    for piece in re.split(r"[.\s>:/#]+", symbol):
        if piece:
            words.extend(split_identifier(piece) or [piece.lower()])
    return " ".join(words)


def chunk_content(chunk: Chunk) -> str:
    """Text stored and shown: the class-context line (if any) then the chunk source."""
    return f"{chunk.context}\n{chunk.text}" if chunk.context else chunk.text


def embedding_text(chunk: Chunk) -> str:
    """Input to the embedder. Small models truncate (MiniLM at 256 word pieces), so the
    most telling parts come first: symbol words, path, context, then the source."""
    head = " ".join(x for x in (symbol_terms(chunk.symbol), "-", chunk.path) if x)
    return f"{head}\n{chunk_content(chunk)}"


def chunk_properties(chunk: Chunk, *, repo: str, commit: str, indexed_at: datetime,
                     run_id: str) -> dict:
    """Weaviate properties of one chunk (see :mod:`indexer.store.schema`)."""
    content = chunk_content(chunk)
    name = chunk.symbol.rsplit(".", 1)[-1].lower() if chunk.symbol else ""
    return {
        "repo": repo, "path": chunk.path, "language": chunk.language, "symbol": chunk.symbol,
        "kind": chunk.kind, "start_line": chunk.start_line, "end_line": chunk.end_line,
        "commit": commit, "indexed_at": indexed_at, "content_hash": chunk.content_hash,
        "run_id": run_id, "name_lower": name, "content": content,
        "identifiers": identifier_parts(content), "symbol_terms": symbol_terms(chunk.symbol),
        "path_terms": path_terms(chunk.path),
    }
