"""The unit everything downstream works on: a :class:`Chunk` of one source file."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

# Kinds of chunk. Code kinds come from tree-sitter; the rest from the doc and window splitters.
KIND_FUNCTION = "function"
KIND_METHOD = "method"
KIND_CLASS = "class"
KIND_CLASS_SIGNATURE = "class_signature"  # a large class split into methods + this outline
KIND_HEADER = "file_header"  # imports and top-level constants of a code file
KIND_SECTION = "section"  # Markdown/RST/Confluence H2/H3 section
KIND_WINDOW = "window"  # fallback 100-line window
KIND_FILE = "file"  # a whole small file (< ~50 lines) with no better parser


@dataclass
class Chunk:
    """One retrievable piece of a file.

    Lines are 1-based and inclusive: ``start_line <= end_line``. ``text`` is the exact
    source of those lines joined with ``"\n"`` (leading comments, decorators and
    docstring included). Two kinds are assembled from several line ranges instead,
    listed in ``extra["ranges"]``: ``file_header`` and ``class_signature``. A method's
    enclosing class line (e.g. ``"class Session:"``) is kept apart in ``context``, not
    in ``text``; embed ``context + "\n" + text`` (as :attr:`content_hash` hashes).
    ``symbol`` is dotted (``Session.send``, ``Context.Copy``), a heading path for doc
    sections, the module/package name for headers, or ``""`` for windows.
    ``extra["part"]`` (1-based) numbers the windows of an over-long chunk.
    """

    path: str
    language: str
    kind: str
    symbol: str
    start_line: int
    end_line: int
    text: str
    context: str = ""
    # Names the chunk defines or mentions that matter for keyword search (filled by chunkers).
    signature: str = ""
    docstring: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        """sha256 hex of ``context + text``: unchanged chunks keep their hash across commits.
        An OpenAPI operation's ``operationId`` is hashed too, since its vector also
        embeds ``operation getPet: …`` (:func:`indexer.documents.embedding_texts`): a
        vector is reused by this hash."""
        key = self.context + "\n" + self.text
        alias = self.extra.get("operation_id") if self.extra else None
        if alias:
            key += f"\n\x00operation {alias}"
        return hashlib.sha256(key.encode("utf-8")).hexdigest()

    @property
    def line_count(self) -> int:
        return self.end_line - self.start_line + 1
