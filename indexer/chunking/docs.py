"""Markdown and reStructuredText chunking: one chunk per H2/H3 section.

Both splitters find headings line by line, then share :func:`_sections`: a file is cut
before every H2 and H3 (and before any H1 after the first one); whatever precedes the
first cut is the preamble, named after the H1 title if there is one. Symbols are
heading paths, ``"Title > Section > Subsection"``; H4 and deeper stay inside their
section.
"""
from __future__ import annotations

import re

from .models import KIND_SECTION, Chunk
from .windows import slice_text, split_lines, window_ranges

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_NOT_PARAGRAPH = re.compile(r"^\s*([-*+>|]|\d+[.)]\s|<)|^ {4}|^\t")
_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+[ \t]*$")

# A heading: 0-based row where its section starts, level (1 = title), text.
Heading = tuple[int, int, str]


def _markdown_headings(lines: list[str]) -> list[Heading]:
    """ATX (``#``..``######``) and setext (``===``/``---``) headings outside fences."""
    headings: list[Heading] = []
    fence = ""
    start = 0
    if lines and lines[0].strip() == "---":  # YAML front matter
        end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
        start = end + 1 if end is not None else 0
    for i in range(start, len(lines)):
        line = lines[i]
        if fence:
            if re.match(r"^ {0,3}" + re.escape(fence[0]) + "{%d,}[ \t]*$" % len(fence), line):
                fence = ""
            continue
        m = _FENCE.match(line)
        if m:
            fence = m.group(1)
            continue
        m = _ATX.match(line)
        if m:
            headings.append((i, len(m.group(1)), (m.group(2) or "").strip()))
            continue
        m = _SETEXT.match(line)
        prev = lines[i - 1] if i > start else ""
        if (m and prev.strip() and not _NOT_PARAGRAPH.match(prev) and not _ATX.match(prev)
                and not _FENCE.match(prev) and (i - 1 == start or not lines[i - 2].strip())
                and not (headings and headings[-1][0] == i - 1)):
            headings.append((i - 1, 1 if m.group(1)[0] == "=" else 2, prev.strip()))
    return headings


def _rst_headings(lines: list[str]) -> list[Heading]:
    """Underlined (and over+underlined) RST titles; levels by first-seen adornment style."""
    styles: list[tuple[str, bool]] = []
    headings: list[Heading] = []

    def is_adornment(j: int) -> bool:
        return 0 <= j < len(lines) and bool(_RST_ADORNMENT.match(lines[j]))

    def add(row: int, style: tuple[str, bool], title: str) -> None:
        if style not in styles:
            styles.append(style)
        headings.append((row, styles.index(style) + 1, title.strip()))

    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        before_ok = i == 0 or not lines[i - 1].strip()
        if (before_ok and is_adornment(i) and i + 2 < n and lines[i + 1].strip()
                and not is_adornment(i + 1) and is_adornment(i + 2)
                and lines[i + 2].strip()[0] == line.strip()[0]):
            add(i, (line.strip()[0], True), lines[i + 1])
            i += 3
            continue
        if (before_ok and line.strip() and not line[0].isspace() and not is_adornment(i)
                and is_adornment(i + 1)):
            under = lines[i + 1].strip()
            if len(under) >= 4 or len(under) >= len(line.strip()):
                add(i, (under[0], False), line)
                i += 2
                continue
        i += 1
    return headings


def _sections(path: str, language: str, lines: list[str], headings: list[Heading],
              max_chunk_lines: int) -> list[Chunk]:
    """Cut ``lines`` at the H2/H3 (and non-first H1) headings into section chunks."""
    path_parts: list[str] = ["", "", ""]
    cuts: list[tuple[int, str]] = [(0, "")]  # (start row, symbol)
    seen_h1 = False
    for row, level, title in headings:
        if level > 3:
            continue
        if level == 1:
            path_parts = [title, "", ""]
        else:
            path_parts[level - 1] = title
            path_parts[level:] = [""] * (3 - level)
        symbol = " > ".join(p for p in path_parts[:level] if p)
        if level == 1 and not seen_h1 and len(cuts) == 1:
            cuts[0] = (0, symbol)  # the first title names the preamble
        else:
            cuts.append((row, symbol))
        seen_h1 = seen_h1 or level == 1
    chunks: list[Chunk] = []
    for k, (start, symbol) in enumerate(cuts):
        end = cuts[k + 1][0] - 1 if k + 1 < len(cuts) else len(lines) - 1
        while end >= start and not lines[end].strip():
            end -= 1
        while start <= end and not lines[start].strip():
            start += 1
        if start > end:
            continue
        ranges = [(start + 1, end + 1)]
        if end - start + 1 > max_chunk_lines:
            ranges = window_ranges(start + 1, end + 1)
        for i, (s, e) in enumerate(ranges, 1):
            extra = {"part": i} if len(ranges) > 1 else {}
            chunks.append(Chunk(path, language, KIND_SECTION, symbol, s, e,
                                slice_text(lines, s, e), extra=extra))
    return chunks


def chunk_markdown(path: str, text: str, *, max_chunk_lines: int = 150) -> list[Chunk]:
    """Split Markdown ``text`` into ``"section"`` chunks at H2/H3 headings.

    Fenced code (```` ``` ```` / ``~~~``) is never read as headings. Sections are
    trimmed of surrounding blank lines; longer than ``max_chunk_lines`` ones become
    100/20 windows numbered by ``extra["part"]``. Blank text gives ``[]``.
    """
    lines = split_lines(text)
    return _sections(path, "markdown", lines, _markdown_headings(lines), max_chunk_lines)


def chunk_rst(path: str, text: str, *, max_chunk_lines: int = 150) -> list[Chunk]:
    """Split reStructuredText into ``"section"`` chunks at its 2nd/3rd title levels.

    The first adornment style seen is H1, the second H2, the third H3; a section starts
    at its overline if the title has one. Otherwise as :func:`chunk_markdown`.
    """
    lines = split_lines(text)
    return _sections(path, "rst", lines, _rst_headings(lines), max_chunk_lines)
