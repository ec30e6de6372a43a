"""What the code of one indexed commit contains, as drift looks things up.

Built in one pass over the commit's code files (``git cat-file --batch``, the files
``coderag index`` would index, docs excluded): every word (identifier or
hyphenated-word), every short string literal, every ``--flag``, every route-like
string (``"/v1/refunds/{id}"``) and the operation paths of OpenAPI/Swagger specs
(with their methods: ``spec_ops``),
``make``/``npm`` targets, file paths and Python
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

from ..chunking.openapi import chunk_openapi, looks_like_openapi
from ..graph.sql_models import CodeDefinition
from ..graph.query import is_test_path
from ..sources import filters, git
from .extract import is_doc_path, normalize_route

#: A "word" of code: an identifier, or hyphen-joined identifiers (``max-conn``).
WORD = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*")
_STRING = re.compile(r"\"([^\"\\\n]{1,200})\"|'([^'\\\n]{1,200})'|`([^`\\\n]{1,200})`")
_FLAG = re.compile(r"--([a-z][a-z0-9]*(?:[-_][a-z0-9]+)*)")
_MAKE_TARGET = re.compile(r"^([A-Za-z0-9_.\-/%]+(?:\s+[A-Za-z0-9_.\-/%]+)*)\s*:(?![=:])")
CATCH_ALL = "%"  # a ``%:`` pattern rule (Sphinx's docs/Makefile) accepts any target name
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
    #: ``"METHOD route"`` (``"DELETE /v1/refunds/{}"``) of the specs' operations.
    spec_ops: dict[str, Loc] = field(default_factory=dict)
    #: The routes of :attr:`routes` that no code string literal has: a spec's only.
    spec_only_routes: set[str] = field(default_factory=set)
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


_TEST_PATHS: dict[str, bool] = {}


def _is_test(path: str) -> bool:
    t = _TEST_PATHS.get(path)
    if t is None:
        if len(_TEST_PATHS) > 200_000:
            _TEST_PATHS.clear()
        t = _TEST_PATHS[path] = is_test_path(path)
    return t


def _spec_routes(idx: CodeIndex, path: str, text: str) -> None:
    """The paths of an OpenAPI/Swagger spec's operations, at each operation's line, into
    ``routes``, and each operation as ``"METHOD route"`` into ``spec_ops`` (a malformed
    spec adds none)."""
    try:
        ops = chunk_openapi(path, "yaml", text)
    except Exception:  # noqa: BLE001 - MalformedSpec or odd YAML: the spec's words still count
        return
    for op in ops:
        route = normalize_route(op.extra["api_path"])
        _keep(idx.routes, route, (path, op.start_line))
        _keep(idx.spec_ops, f"{op.extra['method']} {route}", (path, op.start_line))
        idx.spec_only_routes.add(route)  # until a code string literal has it (build_code_index)


def _keep(table: dict[str, Loc], key: str, loc: Loc) -> None:
    old = table.get(key)
    if old is None or (old[0] != loc[0] and _is_test(old[0]) and not _is_test(loc[0])):
        table[key] = loc


#: Definition queries (tree-sitter, run in C) for repos without a stored call graph.
_DEF_QUERIES = {
    "python": "(function_definition name: (identifier) @n) (class_definition name: (identifier) @n)",
    "go": "(function_declaration name: (identifier) @n) (method_declaration name: (field_identifier) @n)"
          " (type_spec name: (type_identifier) @n)",
    "java": "(method_declaration name: (identifier) @n) (class_declaration name: (identifier) @n)"
            " (interface_declaration name: (identifier) @n)",
    "javascript": "(function_declaration name: (identifier) @n) (class_declaration name: (identifier) @n)"
                  " (method_definition name: (property_identifier) @n)",
    "typescript": "(function_declaration name: (identifier) @n) (class_declaration name: (type_identifier) @n)"
                  " (method_definition name: (property_identifier) @n)",
}
_QUERY_CACHE: dict[str, tuple] = {}


def _definitions(path: str, text: str) -> list[tuple[str, int]]:
    """``[(name, 1-based line)]`` of the functions, methods and classes tree-sitter finds."""
    from ..chunking.languages import detect_language

    lang = detect_language(path)
    grammar = {"tsx": "typescript"}.get(lang or "", lang or "")
    if grammar not in _DEF_QUERIES:
        return []
    try:
        if grammar not in _QUERY_CACHE:
            import tree_sitter as ts
            from tree_sitter_language_pack import get_language, get_parser

            _QUERY_CACHE[grammar] = (get_parser(grammar), ts.Query(get_language(grammar), _DEF_QUERIES[grammar]), ts)
        parser, query, ts = _QUERY_CACHE[grammar]
        data = text.encode("utf-8")
        caps = ts.QueryCursor(query).captures(parser.parse(data).root_node)
    except Exception:  # noqa: BLE001 - no grammar or a parser bug: no definitions from this file
        return []
    return [(data[n.start_byte:n.end_byte].decode("utf-8", "replace"), n.start_point[0] + 1)
            for n in caps.get("n", [])]


def build_code_index(repo: str, root: str | Path, commit: str, *, sessions: sessionmaker | None = None,
                     max_file_bytes: int = 1024 * 1024) -> CodeIndex:
    """Scan ``commit`` of the repository at ``root`` into a :class:`CodeIndex`.

    Definitions come from the SQL call graph of ``repo`` when ``sessions`` is given and
    holds rows for it, else from tree-sitter definition queries (:data:`_DEF_QUERIES`) now. Raises ``NotAGitRepository`` for a bad ``root`` and
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
    code_routes: set[str] = set()  # the routes of code string literals (a spec's own strings are not code)
    for f, data in git.read_blobs(root, to_read):
        text, reason = filters.decode_source(data)
        if reason:
            continue
        idx.files += 1
        if not with_graph:  # no stored call graph for this repo: tree-sitter definitions now
            for name, line in _definitions(f.path, text):
                idx.defs.setdefault(name, []).append((name, f.path, line))
        base = f.path.rsplit("/", 1)[-1].lower()
        is_make = base in _MAKEFILES or base.endswith(".mk")
        is_spec = looks_like_openapi(f.path, text)
        first: dict[str, int] = {}  # this file's words -> first line (merged below)
        for n, line in enumerate(text.splitlines(), 1):
            idx.lines += 1
            loc = (f.path, n)
            for w in WORD.findall(line):
                if w not in first:
                    first[w] = n
            if '"' in line or "'" in line or "`" in line:
                for m in _STRING.finditer(line):
                    s = m.group(1) or m.group(2) or m.group(3)
                    _keep(idx.strings, s, loc)
                    if s.startswith("/"):
                        _keep(idx.routes, normalize_route(s), loc)
                        if not is_spec:
                            code_routes.add(normalize_route(s))
            if "--" in line:
                for m in _FLAG.finditer(line):
                    _keep(idx.flags, m.group(1), loc)
            if is_make and not line.startswith(("\t", " ", "#", ".")):
                m = _MAKE_TARGET.match(line)
                if m:
                    for t in m.group(1).split():
                        _keep(idx.targets, t, loc)
        test = _is_test(f.path)
        words = idx.words
        for w, n in first.items():
            old = words.get(w)
            if old is None or (not test and _is_test(old[0])):
                words[w] = (f.path, n)
        if is_spec:  # a spec's operations are routes as much as the code's
            _spec_routes(idx, f.path, text)
        if base == "package.json":
            try:
                scripts = (json.loads(text) or {}).get("scripts") or {}
            except (ValueError, AttributeError):
                scripts = {}
            for name in scripts:
                _keep(idx.targets, name, (f.path, 1))
    idx.spec_only_routes -= code_routes
    for lst in idx.defs.values():
        lst.sort(key=lambda d: (_is_test(d[1]), d[1], d[2]))
    return idx
