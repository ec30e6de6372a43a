"""What the code of one indexed commit contains, as drift looks things up.

Built in one pass over the commit's code files (``git cat-file --batch``, the files
``coderag index`` would index, docs excluded): every word (identifier or
hyphenated-word), every short string literal, every ``--flag``, every route-like
string (``"/v1/refunds/{id}"``), ``make``/``npm`` targets, file paths and Python
module names; plus the call graph's definitions (``code_definitions``, tree-sitter)
for function and class names. Each entry keeps its first location, preferring non-test
files, for the ``path:line@sha`` evidence.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import sessionmaker

from ..db.models import CodeDefinition
from ..graph import extract_file
from ..graph.query import is_test_path
from ..sources import filters, git
from .extract import is_doc_path, normalize_route

#: A "word" of code: an identifier, or hyphen-joined identifiers (``max-conn``).
WORD = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*")
_STRING = re.compile(r"\"([^\"\\\n]{1,200})\"|'([^'\\\n]{1,200})'|`([^`\\\n]{1,200})`")
_FLAG = re.compile(r"--([a-z][a-z0-9]*(?:[-_][a-z0-9]+)*)")
_MAKE_TARGET = re.compile(r"^([A-Za-z0-9_.\-/]+(?:\s+[A-Za-z0-9_.\-/]+)*)\s*:(?![=:])")
_MAKEFILES = ("makefile", "gnumakefile", "justfile")

Loc = tuple[str, int]  # (path, 1-based line)


@dataclass
class CodeIndex:
    """Look-up tables of one repo at one commit (see the module docstring). Locations
    are ``(path, line)``; ``defs`` maps a definition's bare name to ``(symbol, path, line)``."""

    repo: str
    commit: str
    words: dict[str, Loc] = field(default_factory=dict)
    strings: dict[str, Loc] = field(default_factory=dict)
    flags: dict[str, Loc] = field(default_factory=dict)
    routes: dict[str, Loc] = field(default_factory=dict)
    targets: dict[str, Loc] = field(default_factory=dict)
    paths: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)
    modules: dict[str, str] = field(default_factory=dict)  # dotted module suffix -> path
    py_names: set[str] = field(default_factory=set)
    defs: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)
    files: int = 0
    lines: int = 0

    def evidence(self, loc: Loc) -> str:
        """``path:line@sha7``."""
        return f"{loc[0]}:{loc[1]}@{self.commit[:7]}"


def _keep(table: dict[str, Loc], key: str, loc: Loc) -> None:
    old = table.get(key)
    if old is None or (is_test_path(old[0]) and not is_test_path(loc[0])):
        table[key] = loc


def build_code_index(repo: str, root: str | Path, commit: str, *, sessions: sessionmaker | None = None,
                     max_file_bytes: int = 1024 * 1024) -> CodeIndex:
    """Scan ``commit`` of the repository at ``root`` into a :class:`CodeIndex`.

    Definitions come from the SQL call graph of ``repo`` when ``sessions`` is given and
    holds rows for it, else from tree-sitter (:func:`indexer.graph.extract_file`) now. Raises ``NotAGitRepository`` for a bad ``root`` and
    ``subprocess.CalledProcessError`` when ``commit`` is missing from it.
    """
    root = Path(root)
    idx = CodeIndex(repo=repo, commit=commit)
    files = git.list_files(root, commit)
    to_read = []
    for f in files:
        idx.paths.add(f.path)
        parts = f.path.split("/")
        for i in range(1, len(parts)):
            idx.dirs.add("/".join(parts[:i]))
        if f.path.endswith(".py"):
            mod = parts[:-1] + ([] if parts[-1] == "__init__.py" else [parts[-1][:-3]])
            for i in range(len(mod)):
                idx.modules.setdefault(".".join(mod[i:]), f.path)
            idx.py_names.update(mod)
        if is_doc_path(f.path) or filters.skip_reason_for_path(f.path, f.size_bytes, max_file_bytes):
            continue
        to_read.append(f)
    with_graph = False
    if sessions is not None:
        with sessions() as s:
            rows = s.execute(select(CodeDefinition.name, CodeDefinition.symbol, CodeDefinition.path,
                                    CodeDefinition.start_line).where(CodeDefinition.repo == repo)).all()
        for name, symbol, path, line in rows:
            idx.defs.setdefault(name, []).append((symbol, path, line))
        with_graph = bool(rows)
    for f, data in git.read_blobs(root, to_read):
        text, reason = filters.decode_source(data)
        if reason:
            continue
        idx.files += 1
        if not with_graph:  # no stored call graph for this repo: tree-sitter definitions now
            try:
                facts = extract_file(f.path, text)
            except Exception:  # noqa: BLE001 - a parser bug must not stop the scan
                facts = None
            for d in (facts.definitions if facts is not None else ()):
                idx.defs.setdefault(d.name, []).append((d.symbol, f.path, d.start_line))
        base = f.path.rsplit("/", 1)[-1].lower()
        is_make = base in _MAKEFILES or base.endswith(".mk")
        for n, line in enumerate(text.splitlines(), 1):
            idx.lines += 1
            loc = (f.path, n)
            for w in WORD.findall(line):
                _keep(idx.words, w, loc)
            if '"' in line or "'" in line or "`" in line:
                for m in _STRING.finditer(line):
                    s = m.group(1) or m.group(2) or m.group(3)
                    _keep(idx.strings, s, loc)
                    if s.startswith("/"):
                        _keep(idx.routes, normalize_route(s), loc)
            if "--" in line:
                for m in _FLAG.finditer(line):
                    _keep(idx.flags, m.group(1), loc)
            if is_make and not line.startswith(("\t", " ", "#", ".")):
                m = _MAKE_TARGET.match(line)
                if m:
                    for t in m.group(1).split():
                        _keep(idx.targets, t, loc)
        if base == "package.json":
            try:
                scripts = (json.loads(text) or {}).get("scripts") or {}
            except (ValueError, AttributeError):
                scripts = {}
            for name in scripts:
                _keep(idx.targets, name, (f.path, 1))
    for lst in idx.defs.values():
        lst.sort(key=lambda d: (is_test_path(d[1]), d[1], d[2]))
    return idx
