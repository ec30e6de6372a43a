"""How a :class:`Chunk` becomes a Weaviate object and an embedding input.

Kept in one place so that indexing and re-indexing (webhooks, Confluence) agree.
"""
from __future__ import annotations

import re
from datetime import datetime
from typing import Sequence

from .chunking.models import Chunk
from common.identifiers import identifier_parts, split_identifier

_PATH_SPLIT = re.compile(r"[/\\._\-]+")

ROLE_CODE, ROLE_TEST, ROLE_DOCS, ROLE_CHANGELOG, ROLE_EXAMPLE = "code", "test", "docs", "changelog", "example"
_TEST_DIRS = {"test", "tests", "testing", "__tests__", "spec", "specs", "testdata", "e2e"}
# Test files by each language's naming convention: pytest, Go, Jest/Vitest, JUnit and
# Kotlin/Swift/C#/Scala/PHP test classes (FooTest, FooTests, FooSpec, FooSuite), RSpec and
# busted (foo_spec), Minitest/ExUnit/GoogleTest/Dart (foo_test), bats.
_TEST_NAME = re.compile(r"(^test_.*\.(py|c|cc|cpp|lua|rb|dart)$|_test\.(py|go|rb|exs?|c|cc|cpp|lua|dart|zig)$"
                        r"|_spec\.(rb|lua)$|\.(test|spec)\.[jt]sx?$|^Test.*\.java$"
                        r"|.+(Tests?|Spec|Suite)\.(java|kt|swift|cs|scala|php)$|\.bats$|^conftest\.py$)")
_CHANGELOG_NAME = re.compile(r"^(HISTORY|CHANGELOG|CHANGES|NEWS|RELEASE[-_]?NOTES)(\.\w+)?$", re.IGNORECASE)
_DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc")
_EXAMPLE_DIRS = {"example", "examples", "samples", "sample", "demo", "demos"}


_MAN_PAGE = re.compile(r"\.[1-9][a-z]?$")


def _is_man_page(name: str, dirs: set[str]) -> bool:
    """A troff manual page (``http.1``, ``git-log.1``, ``printf.3p``) or anything under
    ``man/``: documentation by the Unix convention (man-pages(7) sections 1-9)."""
    return bool(_MAN_PAGE.search(name)) or "man" in dirs


def file_role(path: str) -> str:
    """What a file is for: ``code``, ``test``, ``docs``, ``changelog`` or ``example``.

    Retrieval uses it as a prior: a question about behaviour is answered by the code
    that implements it, not by the test that exercises it or the changelog entry that
    announced it (unless the question asks about tests).
    """
    parts = path.split("/")
    name = parts[-1]
    dirs = {d.lower() for d in parts[:-1]}
    if _CHANGELOG_NAME.match(name):
        return ROLE_CHANGELOG
    if dirs & _TEST_DIRS or _TEST_NAME.search(name):
        return ROLE_TEST
    if name.lower().endswith(_DOC_SUFFIXES) or "docs" in dirs or "doc" in dirs or _is_man_page(name, dirs):
        return ROLE_DOCS
    if dirs & _EXAMPLE_DIRS:
        return ROLE_EXAMPLE
    return ROLE_CODE


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


def chunk_alias(chunk: Chunk) -> str:
    """Another name a question may use for ``chunk`` besides its symbol: an OpenAPI
    operation's ``operationId`` (``getPet`` for ``GET /pets/{id}``), ``""`` for others."""
    alias = chunk.extra.get("operation_id") if chunk.extra else None
    return str(alias).strip() if alias else ""


def chunk_symbol_terms(chunk: Chunk) -> str:
    """The words of the chunk's symbol, then of its :func:`chunk_alias` (``get pets id get
    pet``): what the keyword search's ``symbol_terms`` and the embedding's head hold."""
    return " ".join(x for x in (symbol_terms(chunk.symbol), symbol_terms(chunk_alias(chunk))) if x)


def _embedding_head(chunk: Chunk) -> str:
    """``symbol words [alias] - path``: the alias also as written (``getPet``), since a
    question names it that way."""
    return " ".join(x for x in (chunk_symbol_terms(chunk), chunk_alias(chunk), "-", chunk.path) if x)


def _alias_text(chunk: Chunk) -> str:
    """``operation getPet: Find a pet``: the chunk's other name and what it does, embedded
    apart from its source (and averaged with it), so a question that names the operation
    ("what does getPet do?") is close to it, not only to the long YAML; ``""`` without an
    alias."""
    alias = chunk_alias(chunk)
    return f"operation {alias}: {chunk.docstring}".strip().rstrip(":") if alias else ""


def chunk_content(chunk: Chunk) -> str:
    """Text stored and shown: the class-context line (if any) then the chunk source."""
    return f"{chunk.context}\n{chunk.text}" if chunk.context else chunk.text


def embedding_text(chunk: Chunk) -> str:
    """Input to the embedder. Small models truncate (MiniLM at 256 word pieces), so the
    most telling parts come first: symbol words, path, context, then the source."""
    return f"{_embedding_head(chunk)}\n{chunk_content(chunk)}"


# Long chunks are embedded as a head plus sub-windows of this many lines, and their
# vector is the normalised mean: MiniLM reads only ~25 lines of code (256 word pieces),
# so without this a 120-line function is represented by its first fifth.
EMBED_WINDOW_LINES = 25


def embedding_texts(chunk: Chunk, policy=None) -> list[str]:
    """Embedder inputs for ``chunk``; their vectors are averaged (see pipeline). ``[]``
    means the chunk gets no vector (keyword- and name-searchable only).

    ``policy``: an :class:`indexer.embedding_policy.EmbeddingPolicy` (default
    :data:`~indexer.embedding_policy.DEFAULT_POLICY`): per file role, all sub-windows,
    the head only, or nothing. A chunk with an alias (an OpenAPI operation's
    ``operationId``) also gets ``operation getPet: Find a pet`` (:func:`_alias_text`).
    """
    from .embedding_policy import DEFAULT_POLICY

    policy = policy or DEFAULT_POLICY
    mode = policy.mode(file_role(chunk.path))
    if mode == "none":
        return []
    first = embedding_text(chunk)
    named = [t for t in (_alias_text(chunk),) if t]
    lines = chunk.text.split("\n")
    if mode == "head" or len(lines) <= EMBED_WINDOW_LINES * 1.5:
        return [first, *named]
    head = _embedding_head(chunk)
    rest = [f"{head}\n" + "\n".join(lines[i:i + EMBED_WINDOW_LINES])
            for i in range(EMBED_WINDOW_LINES, len(lines), EMBED_WINDOW_LINES)]
    if policy.max_windows is not None:
        rest = rest[:policy.max_windows]
    return [first, *named, *rest]


def chunk_properties(chunk: Chunk, *, repo: str, commit: str, indexed_at: datetime,
                     run_id: str) -> dict:
    """Weaviate properties of one chunk (see :mod:`indexer.store.schema`)."""
    content = chunk_content(chunk)
    # the exact-name boost matches the last dotted part of the symbol, or the chunk's alias
    # (an operationId: a question names the operation so, never by "GET /pets/{id}")
    alias = chunk_alias(chunk)
    name = alias.lower() if alias else chunk.symbol.rsplit(".", 1)[-1].lower() if chunk.symbol else ""
    return {
        "repo": repo, "path": chunk.path, "language": chunk.language, "symbol": chunk.symbol,
        "kind": chunk.kind, "start_line": chunk.start_line, "end_line": chunk.end_line,
        "commit": commit, "indexed_at": indexed_at, "content_hash": chunk.content_hash,
        "run_id": run_id, "name_lower": name, "role": file_role(chunk.path), "content": content,
        "identifiers": identifier_parts(content), "symbol_terms": chunk_symbol_terms(chunk),
        "path_terms": path_terms(chunk.path),
    }


def embed_chunks(embedder, chunks: Sequence[Chunk], policy=None) -> list[list[float] | None]:
    """One vector per chunk: the L2-normalised mean of the vectors of its
    :func:`embedding_texts` under ``policy`` (default
    :data:`~indexer.embedding_policy.DEFAULT_POLICY`; a single text for most chunks), or
    ``None`` for a chunk the policy leaves keyword-only."""
    texts: list[str] = []
    owners: list[int] = []
    for n, chunk in enumerate(chunks):
        for t in embedding_texts(chunk, policy):
            texts.append(t)
            owners.append(n)
    sums: list[list[float] | None] = [None] * len(chunks)
    for owner, vec in zip(owners, embedder.embed_documents(texts) if texts else []):
        acc = sums[owner]
        sums[owner] = list(vec) if acc is None else [a + b for a, b in zip(acc, vec)]
    out: list[list[float] | None] = []
    for acc in sums:
        if acc is None:
            out.append(None)
            continue
        norm = sum(x * x for x in acc) ** 0.5 or 1.0
        out.append([x / norm for x in acc])
    return out
