"""Checks on what the model wrote: citation markers and the code names it mentions.

``validate_citations(text, n_sources)`` -> :class:`CitationCheck`: every ``[n]`` (also
``[1, 3]`` and ``[1][2]``) must name a source that was given (1..n_sources); others are
stripped and counted. Valid markers are renumbered by first appearance, so that marker
``[k]`` in the returned text is ``sources_used[k-1]`` (the Answer's citation order).

``find_symbol_mentions(text)`` -> code names the answer names: backticked identifiers
(`foo`, `Foo.bar`, `foo()`), and outside backticks ``foo_bar()`` / ``Foo.bar()`` calls and
``FooBar.baz`` dotted names. ``unverified_symbols(...)`` keeps those found in no given
chunk and not in the index (``ChunkStore.query.by_symbol``, exact symbol match).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from indexer.read import ChunkReader, StoredChunk

_MARKER = re.compile(r"\[(\s*\d+\s*(?:,\s*\d+\s*)*)\]")


@dataclass
class CitationCheck:
    """text: markers renumbered, invalid ones removed. sources_used: 0-based indices of the
    given sources, in new marker order. invalid: how many invalid numbers were stripped."""

    text: str
    sources_used: list[int] = field(default_factory=list)
    invalid: int = 0


def validate_citations(text: str, n_sources: int) -> CitationCheck:
    """Strip markers that point outside 1..``n_sources``; renumber the rest by first use."""
    order: dict[int, int] = {}  # given source number -> new marker number
    invalid = 0

    def repl(m: re.Match) -> str:
        nonlocal invalid
        out = []
        for part in m.group(1).split(","):
            n = int(part)
            if not 1 <= n <= n_sources:
                invalid += 1
                continue
            if n not in order:
                order[n] = len(order) + 1
            if order[n] not in out:
                out.append(order[n])
        return "[" + ", ".join(map(str, out)) + "]" if out else ""

    new = _MARKER.sub(repl, text)
    if invalid:  # tidy the gaps a stripped marker leaves ("foo [9]." -> "foo.")
        new = re.sub(r"[ \t]+([.,;:!?)])", r"\1", new)
        new = re.sub(r"[ \t]{2,}", " ", new)
    return CitationCheck(text=new, sources_used=[n - 1 for n in sorted(order, key=order.get)],
                         invalid=invalid)


_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_BACKTICKED = re.compile(r"`([^`\n]{1,120})`")
_BACKTICK_NAME = re.compile(rf"^({_IDENT}(?:\.{_IDENT})*)(?:\(\))?$")
_CALL = re.compile(rf"(?<![\w.`])({_IDENT}(?:\.{_IDENT})*)\(\)")
_CAMEL_DOTTED = re.compile(rf"(?<![\w.`])([A-Z][A-Za-z0-9_]*(?:\.{_IDENT})+)(?![\w(])")
# Not names worth verifying: literals, keywords, types every language has, file suffixes.
_COMMON = frozenset("""
none true false nil null self this cls super return if else for while def func class struct
int str bool float bytes dict list tuple set map string error byte rune any object interface
""".split())
_FILE_SUFFIXES = ("py", "go", "ts", "tsx", "js", "java", "md", "rst", "txt", "json", "yaml",
                  "yml", "toml", "cfg", "ini", "html", "sh", "com", "org", "io", "net")


def _is_candidate(name: str) -> bool:
    if name.lower() in _COMMON or len(name) < 3:
        return False
    if "." in name and name.rsplit(".", 1)[-1].lower() in _FILE_SUFFIXES:
        return False
    if name.isupper() and "_" not in name:  # HTTP, GET, JSON: words, not symbols
        return False
    return True


def find_symbol_mentions(text: str) -> list[str]:
    """Code names the answer mentions, in order of appearance, without ``()``."""
    found: list[str] = []

    def add(name: str) -> None:
        name = name.strip()
        if _is_candidate(name) and name not in found:
            found.append(name)

    for m in _BACKTICKED.finditer(text):
        bm = _BACKTICK_NAME.match(m.group(1).strip())
        if bm:
            add(bm.group(1))
    unticked = _BACKTICKED.sub(" ", text)
    for rx in (_CALL, _CAMEL_DOTTED):
        for m in rx.finditer(unticked):
            add(m.group(1))
    return found


def _in_chunks(name: str, chunks: Sequence[StoredChunk]) -> bool:
    """The name, or its last dotted part, appears as a whole word in a chunk or its symbol."""
    last = name.rsplit(".", 1)[-1]
    pats = [re.compile(rf"(?<![\w]){re.escape(x)}(?![\w])") for x in {name, last}]
    for c in chunks:
        hay = f"{c.symbol}\n{c.content}"
        if any(p.search(hay) for p in pats):
            return True
    return False


def _in_index(names: Sequence[str], store: ChunkReader | None, repos: Iterable[str]) -> set[str]:
    """Names (or their last dotted part) that are an exact symbol of some chunk of ``repos``."""
    if store is None or not names:
        return set()
    variants = {n: {n, n.rsplit(".", 1)[-1]} for n in names}
    wanted = sorted(set().union(*variants.values()))
    symbols: set[str] = set()
    for repo in sorted(set(repos)):
        try:
            found = store.query.by_symbol(repo, wanted, limit=max(50, len(wanted) * 5))
        except Exception:  # the check is advisory: an index error must not sink the answer
            continue
        for c in found:
            symbols.add(c.symbol)
            symbols.add(c.symbol.rsplit(".", 1)[-1])
    return {n for n, vs in variants.items() if vs & symbols}


def unverified_symbols(text: str, chunks: Sequence[StoredChunk], store: ChunkReader | None,
                       repos: Iterable[str]) -> list[str]:
    """Names in ``text`` found neither in ``chunks`` (those given to the model) nor as a
    symbol of the index (in ``repos``). One ``fetch_by_symbol`` query per repo, at most."""
    candidates = [n for n in find_symbol_mentions(text) if not _in_chunks(n, chunks)]
    known = _in_index(candidates, store, repos)
    return [n for n in candidates if n not in known]
