"""Identifier splitting for keyword search.

Weaviate's ``word`` tokenizer keeps ``calculatePriceWithTax`` as one token and splits
``merge_setting`` on ``_``, so a question that says "calculate price" never matches the
camelCase name. Every chunk therefore gets an extra property with its identifiers split
into lower-case parts, and questions are expanded the same way at query time.
"""
from __future__ import annotations

import re

# An identifier: a letter or underscore, then letters, digits, underscores.
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# camelCase / PascalCase / acronym boundaries: "HTTPServerError2x" -> HTTP Server Error 2x
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+[a-z]*")


def split_identifier(name: str) -> list[str]:
    """Lower-case parts of one identifier.

    >>> split_identifier("calculatePriceWithTax")
    ['calculate', 'price', 'with', 'tax']
    >>> split_identifier("HTTPAdapter")
    ['http', 'adapter']
    >>> split_identifier("merge_environment_settings")
    ['merge', 'environment', 'settings']
    """
    parts: list[str] = []
    for piece in name.split("_"):
        parts.extend(m.group(0).lower() for m in _CAMEL_RE.finditer(piece))
    return parts


def is_compound(name: str) -> bool:
    """True for names that splitting changes: snake_case, camelCase, PascalCase with 2+ parts."""
    return len(split_identifier(name)) > 1


def identifier_parts(text: str, *, max_tokens: int = 20000) -> str:
    """Space-joined parts of every compound identifier in ``text`` (order kept, repeats kept).

    Repeats are kept on purpose: BM25 term frequency should still reflect how often a
    name is used. ``max_tokens`` bounds the output for very large chunks.
    """
    out: list[str] = []
    for m in IDENT_RE.finditer(text):
        word = m.group(0)
        if is_compound(word):
            out.extend(split_identifier(word))
            if len(out) >= max_tokens:
                break
    return " ".join(out)
