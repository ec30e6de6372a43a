"""Fallback chunking: fixed-size, overlapping line windows.

Used for any text without a better splitter (config files, unknown languages, code
languages without a tree-sitter table) and, through :func:`window_ranges`, by the code
and doc splitters to cut over-long functions and sections.
"""
from __future__ import annotations

from .models import KIND_FILE, KIND_WINDOW, Chunk

# From the design card: 100-line windows overlapping by 20 lines; files shorter than
# 50 lines are kept whole.
WINDOW_LINES = 100
WINDOW_OVERLAP = 20
SMALL_FILE_LINES = 50


def split_lines(text: str) -> list[str]:
    """Split ``text`` into lines on ``"\\n"`` only (like tree-sitter rows).

    A single trailing newline does not start an extra line, so ``"a\\nb\\n"`` has two
    lines and ``""`` has none. ``"\\r"`` is kept at the end of its line.
    """
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def window_ranges(
    start: int, end: int, size: int = WINDOW_LINES, overlap: int = WINDOW_OVERLAP
) -> list[tuple[int, int]]:
    """Cut the inclusive 1-based line range ``start..end`` into overlapping windows.

    Windows are ``size`` lines long and start every ``size - overlap`` lines
    (``start``, ``start+80``, ... with the defaults); the last one ends at ``end``, and
    no window is emitted that the previous one already contains. Returns ``[]`` when
    ``end < start``. Raises ``ValueError`` if ``size <= overlap`` or ``size < 1``.
    """
    if size < 1 or overlap < 0 or size <= overlap:
        raise ValueError(f"bad window size/overlap: {size}/{overlap}")
    ranges: list[tuple[int, int]] = []
    s = start
    while s <= end:
        e = min(s + size - 1, end)
        ranges.append((s, e))
        if e >= end:
            break
        s += size - overlap
    return ranges


def slice_text(lines: list[str], start: int, end: int) -> str:
    """Return lines ``start..end`` (1-based, inclusive) joined with ``"\\n"``."""
    return "\n".join(lines[start - 1 : end])


def window_chunks(path: str, language: str, text: str) -> list[Chunk]:
    """Chunk ``text`` with the fallback rule.

    A file of fewer than :data:`SMALL_FILE_LINES` lines is one ``"file"`` chunk; a
    longer one becomes ``"window"`` chunks from :func:`window_ranges`. A file with no
    non-blank line gives ``[]``. Never raises for any ``str`` input.
    """
    lines = split_lines(text)
    if not any(line.strip() for line in lines):
        return []
    n = len(lines)
    if n < SMALL_FILE_LINES:
        return [Chunk(path, language, KIND_FILE, "", 1, n, slice_text(lines, 1, n))]
    return [
        Chunk(path, language, KIND_WINDOW, "", s, e, slice_text(lines, s, e))
        for s, e in window_ranges(1, n)
    ]
