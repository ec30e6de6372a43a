"""Tree-sitter parsing shared by the chunker and the call-graph extractor: one parse per file.

An indexing run chunks a file (:mod:`indexer.chunking`) and then extracts its call-graph
facts (:mod:`indexer.graph`) on the same thread, from the same bytes. :func:`parse` keeps
the last tree it made on each thread, so the second reader gets that tree instead of
parsing the file again. Trees are only read (never edited), so sharing one is safe.
"""
from __future__ import annotations

import threading

from tree_sitter_language_pack import get_parser

_local = threading.local()


def parser_for(grammar: str):
    """The thread-local cached tree-sitter parser for ``grammar`` (a
    ``tree_sitter_language_pack`` name such as ``python``, ``tsx``); raises ``LookupError``
    for an unknown grammar."""
    cache = _local.__dict__.setdefault("parsers", {})
    if grammar not in cache:
        cache[grammar] = get_parser(grammar)
    return cache[grammar]


def parse(grammar: str, src: bytes):
    """The ``tree_sitter.Tree`` of ``src`` (UTF-8 bytes) in ``grammar``: the tree parsed last
    on this thread when it was for the same grammar and the same bytes, else a new parse."""
    last = getattr(_local, "last", None)
    if last is not None and last[0] == grammar and (last[1] is src or last[1] == src):
        return last[2]
    tree = parser_for(grammar).parse(src)
    _local.last = (grammar, src, tree)
    _local.parses = getattr(_local, "parses", 0) + 1
    return tree


def parses_on_this_thread() -> int:
    """How many times :func:`parse` has run the parser on this thread (reused trees not
    counted): what shows a file is parsed once."""
    return getattr(_local, "parses", 0)
