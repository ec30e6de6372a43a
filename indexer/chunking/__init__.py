"""Split source files into :class:`Chunk` objects for indexing.

Entry point: :func:`chunk_file`. Code languages with a tree-sitter table
(``languages.CODE_LANGUAGES``: Python, Go, Java, JavaScript, TypeScript;
``generic.GENERIC_LANGUAGES``: Rust, C, C++, C#, Kotlin, Swift, Ruby, PHP, Scala, Lua,
Elixir, Haskell, Bash, Zig) get function/method/class chunks, Markdown and RST get
heading sections, OpenAPI/Swagger specs one chunk per operation (:mod:`.openapi`),
everything else gets line windows.
"""
from __future__ import annotations

import logging

from .code import chunk_code
from .docs import chunk_markdown, chunk_rst
from .generic import GENERIC_LANGUAGES, chunk_generic
from .languages import CODE_LANGUAGES, detect_language
from .models import Chunk
from .openapi import MalformedSpec, chunk_openapi, looks_like_openapi
from .windows import window_chunks

__all__ = ["Chunk", "chunk_file", "detect_language"]

log = logging.getLogger(__name__)


def chunk_file(path: str, text: str, *, max_class_lines: int = 80,
               max_chunk_lines: int = 150) -> list[Chunk]:
    """Split one file into chunks, sorted by ``start_line``.

    ``path`` is only used to pick the language (:func:`detect_language`) and is copied
    into each chunk; ``text`` is the decoded file content. Line numbers are 1-based and
    inclusive. Classes of at most ``max_class_lines`` lines (leading comments included)
    stay whole; longer ones are split into methods plus a ``class_signature`` outline.
    Functions, sections and leftovers over ``max_chunk_lines`` lines are cut into
    100-line windows overlapping by 20 (``extra["part"]`` numbers them from 1).

    Never raises: if a splitter fails on odd input, the failure is logged and the file
    falls back to plain windows. An empty or all-blank file gives ``[]``.
    """
    language = detect_language(path) or "text"
    if looks_like_openapi(path, text):  # one chunk per operation, carrying info.version
        try:
            return chunk_openapi(path, language, text)
        except MalformedSpec as exc:
            log.warning("%s: OpenAPI spec not split by operation (%s); indexed as line windows", path, exc)
        except Exception:  # noqa: BLE001 - any splitter bug must not stop indexing
            log.exception("%s: OpenAPI chunking failed; falling back to windows", path)
        windows = window_chunks(path, language, text)
        for c in windows:  # counted in the run's parse_warnings, like a code file with syntax errors
            c.extra["syntax_errors"] = True
        return windows
    try:
        if language in CODE_LANGUAGES:
            return chunk_code(path, language, text, max_class_lines=max_class_lines,
                              max_chunk_lines=max_chunk_lines)
        if language in GENERIC_LANGUAGES:
            return chunk_generic(path, language, text, max_class_lines=max_class_lines,
                                 max_chunk_lines=max_chunk_lines)
        if language == "markdown":
            return chunk_markdown(path, text, max_chunk_lines=max_chunk_lines)
        if language == "rst":
            return chunk_rst(path, text, max_chunk_lines=max_chunk_lines)
    except Exception:  # noqa: BLE001 - any splitter bug must not stop indexing
        log.exception("%s: %s chunking failed; falling back to windows", path, language)
    try:
        return window_chunks(path, language, text)
    except Exception:  # noqa: BLE001
        log.exception("%s: window chunking failed", path)
        return []
