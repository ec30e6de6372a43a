"""Queries over a resolved call graph: find definitions, list (transitive) callers.

>>> facts = [extract_file(p, src) for p, src in files.items()]
>>> graph = CallGraph(facts, resolve(facts))
>>> target = graph.find_definitions("Session.request")[0]
>>> graph.callers(target, depth=2)
"""
from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass

from .facts import Definition, FileFacts
from .resolve import (RULE_CALLBACK, RULE_DECORATOR, RULE_DYNAMIC, RULE_EXTERNAL, RULE_RECEIVER_UNKNOWN,
                      RULE_VALUE, Edge)

_VIA = {RULE_DECORATOR: "decorator", RULE_VALUE: "value", RULE_CALLBACK: "callback"}

_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|testing|spec|specs)/"
    r"|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$"
    r"|_test\.go$"
    r"|\.(test|spec)\.[cm]?[jt]sx?$"
    r"|(Test|Tests|IT)\.java$|(^|/)src/test/")


def is_test_path(path: str) -> bool:
    """True for test files: ``tests/``, ``test_*.py``, ``*_test.go``, ``*.test.ts``,
    ``*.spec.js``, ``*Test.java``, ``src/test/`` and similar."""
    return bool(_TEST_PATH.search(path))


#: Built-ins that run code given as a string: a static graph cannot follow them. (A call
#: of what ``getattr`` returns is a call of an unknown value, a blind spot of its own.)
DYNAMIC_LOOKUPS = frozenset({"eval", "exec"})


@dataclass(frozen=True)
class BlindSpot:
    """A call site a static graph cannot follow: a call of a value nothing is known of
    (an untyped parameter, a computed container element) or a dynamic look-up
    (``getattr``, ``eval``, reflection). ``what`` is the called name as written."""

    path: str
    symbol: str
    line: int
    what: str

    def to_dict(self) -> dict:
        return {"path": self.path, "symbol": self.symbol, "line": self.line, "what": self.what}


@dataclass(frozen=True)
class DefinitionRef:
    """A definition with the file it lives in (what queries return)."""

    path: str
    symbol: str
    name: str
    kind: str
    start_line: int
    end_line: int
    language: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return self.path, self.symbol


@dataclass(frozen=True)
class Caller:
    """One caller of a definition. ``symbol`` is "" for module-level code; ``line`` is
    its first call line; ``depth`` 1 = direct caller; ``resolved`` False when the
    caller was matched by (unambiguous) name only."""

    path: str
    symbol: str
    line: int
    depth: int
    is_test: bool
    resolved: bool
    #: How it calls: ``call`` (a call as written), ``decorator`` (it is decorated by the
    #: target), ``value`` (through an alias, a container element, a returned function, a
    #: stored bound method, ``partial``), ``callback`` (through a parameter it was passed).
    via: str = "call"

    def to_dict(self) -> dict:
        return {"path": self.path, "symbol": self.symbol, "line": self.line,
                "depth": self.depth, "is_test": self.is_test, "resolved": self.resolved, "via": self.via}


def _module_names(path: str, language: str, package: str) -> list[str]:
    """Dotted prefixes a definition may be qualified with: the module path for Python
    and JS/TS (``requests.utils``), the package for Java, package and directory for Go."""
    if language == "java":
        return [package] if package else []
    if language == "go":
        d = posixpath.dirname(path)
        return [n for n in (package, d.replace("/", ".")) if n]
    stem = re.sub(r"\.[^./]+$", "", path)
    if stem.endswith("/__init__") or stem == "__init__":
        stem = posixpath.dirname(stem)
    return [stem.replace("/", ".")] if stem else []


class CallGraph:
    """Definitions and edges of one repository, indexed for caller queries.

    ``all_facts``: the :class:`FileFacts` of every file; ``edges``: the output of
    :func:`indexer.graph.resolve.resolve` for those facts.
    """

    def __init__(self, all_facts: list[FileFacts], edges: list[Edge]):
        self.facts = {f.path: f for f in all_facts if f is not None}
        self._unmapped: list[tuple[str, int, str]] | None = None
        self.definitions: dict[tuple[str, str], DefinitionRef] = {}
        self.by_name: dict[str, list[DefinitionRef]] = defaultdict(list)
        for f in self.facts.values():
            for d in f.definitions:
                ref = self._ref(f, d)
                if ref.key in self.definitions:  # overloads / redefinitions: keep the last
                    self.by_name[d.name] = [r for r in self.by_name[d.name] if r.key != ref.key]
                self.definitions[ref.key] = ref
                self.by_name[d.name].append(ref)
        self.incoming: dict[tuple[str, str], list[Edge]] = defaultdict(list)
        self.unresolved_by_name: dict[str, list[Edge]] = defaultdict(list)
        self.receiver_unknown_by_name: dict[str, list[Edge]] = defaultdict(list)
        self.blind_by_path: dict[str, list[Edge]] = defaultdict(list)
        for e in edges:
            if e.rule == RULE_DYNAMIC or (e.rule == RULE_EXTERNAL and e.callee_name in DYNAMIC_LOOKUPS):
                self.blind_by_path[e.caller_path].append(e)
            if e.resolved:
                self.incoming[(e.callee_path, e.callee_symbol)].append(e)
            elif e.rule == RULE_RECEIVER_UNKNOWN:
                self.receiver_unknown_by_name[e.callee_name].append(e)
            elif e.rule not in (RULE_EXTERNAL, RULE_DYNAMIC):
                self.unresolved_by_name[e.callee_name].append(e)

    def unmapped_imports(self) -> list[tuple[str, int, str]]:
        """Imports of the repository's own modules that map to none of them
        (:meth:`indexer.graph.resolve.Resolver.unmapped_imports`): ``[(path, line, module)]``."""
        if self._unmapped is None:
            from .resolve import Resolver

            self._unmapped = Resolver(list(self.facts.values())).unmapped_imports()
        return self._unmapped

    @staticmethod
    def _ref(f: FileFacts, d: Definition) -> DefinitionRef:
        return DefinitionRef(f.path, d.symbol, d.name, d.kind, d.start_line, d.end_line,
                             f.language)

    # ---- finding definitions ---------------------------------------------------------
    def find_definitions(self, query: str) -> list[DefinitionRef]:
        """Definitions matching ``query``, sorted by path then line.

        Accepts ``path:line`` (the innermost definition containing that line, or []),
        ``Class.method``, ``module.func`` / ``pkg.module.Class.method`` (matched against
        the file's module path, Go/Java package, or Go directory), or a bare name. A
        dotted query that is some definition's fully qualified name returns only those
        (exact beats suffix). Returns [] when nothing matches.
        """
        query = query.strip()
        m = re.fullmatch(r"(.+):(\d+)", query)
        if m and m.group(1) in self.facts:
            return self._at_line(m.group(1), int(m.group(2)))
        if not query:
            return []
        exact, suffix = [], []
        for ref in self.definitions.values():
            f = self.facts[ref.path]
            qualified = [f"{mod}.{ref.symbol}" for mod in _module_names(ref.path, f.language, f.package)]
            if query in qualified:
                exact.append(ref)
            elif any(n == query or n.endswith("." + query) for n in [ref.symbol] + qualified):
                suffix.append(ref)
        # a fully qualified name that exists exactly beats names it is only the end of
        # (``a.util.helper`` is a/util.py's, not b/a/util.py's)
        out = exact if exact and "." in query else exact + suffix
        return sorted(out, key=lambda r: (r.path, r.start_line))

    def _at_line(self, path: str, line: int) -> list[DefinitionRef]:
        inside = [r for r in self.definitions.values()
                  if r.path == path and r.start_line <= line <= r.end_line]
        if not inside:
            return []
        return [min(inside, key=lambda r: (r.end_line - r.start_line, -r.start_line))]

    # ---- callers ---------------------------------------------------------------------
    def _direct(self, target: DefinitionRef, include_unresolved: str,
                receiver_unknown: bool = False) -> list[Caller]:
        """Direct callers, one per caller symbol, first call line. ``receiver_unknown``
        adds the member calls of that name whose receiver could not be evaluated."""
        first: dict[tuple[str, str], tuple[int, bool, str]] = {}

        def add(e: Edge, resolved: bool):
            key = (e.caller_path, e.caller_symbol)
            if key == target.key:
                return  # recursion is not a caller
            old = first.get(key)
            via = _VIA.get(e.rule, "call")
            if old is None or e.line < old[0]:
                first[key] = (e.line, resolved or (old[1] if old else False), via)
            elif resolved:
                first[key] = (old[0], True, old[2])

        for e in self.incoming.get(target.key, ()):
            add(e, True)
        if include_unresolved == "all" or (
                include_unresolved == "unique" and len(self.by_name.get(target.name, ())) == 1):
            for e in self.unresolved_by_name.get(target.name, ()):
                add(e, False)
        if receiver_unknown:
            for e in self.receiver_unknown_by_name.get(target.name, ()):
                add(e, False)
        return [Caller(p, s, line, 1, is_test_path(p), res, via)
                for (p, s), (line, res, via) in sorted(first.items(), key=lambda kv: (kv[0], kv[1][0]))]

    def callers(self, definition: DefinitionRef, depth: int = 1,
                include_unresolved: str = "unique") -> list[Caller]:
        """Callers of ``definition`` up to ``depth`` (BFS, each caller once, at its
        smallest depth; cycles and recursion are safe). A caller is ``resolved=False``
        when its call was matched by name or when it was reached through such a caller.

        ``include_unresolved``: ``"unique"`` (default) adds unresolved calls whose
        callee name equals the definition's name when exactly one definition in the
        repo has that name; ``"none"`` only resolved edges; ``"all"`` every same-name
        unresolved call. Module-level callers (symbol "") are listed but not expanded.
        Raises ``ValueError`` for an unknown ``include_unresolved``.
        """
        if include_unresolved not in ("unique", "none", "all"):
            raise ValueError(f"include_unresolved must be unique|none|all, not {include_unresolved!r}")
        out: list[Caller] = []
        seen = {definition.key}
        frontier = [(definition, True)]  # (definition, reached through resolved edges only)
        for level in range(1, max(depth, 0) + 1):
            nxt = []
            for target, sure in frontier:
                for c in self._direct(target, include_unresolved):
                    key = (c.path, c.symbol)
                    if key in seen:
                        continue
                    seen.add(key)
                    # a caller found through a name match is a guess, and so is every
                    # caller built on it: labelled at every depth
                    resolved = c.resolved and sure
                    out.append(Caller(c.path, c.symbol, c.line, level, c.is_test, resolved, c.via))
                    ref = self.definitions.get(key)
                    if ref is not None:
                        nxt.append((ref, resolved))
            frontier = nxt
            if not frontier:
                break
        return out

    def blind_spots(self, paths) -> list[BlindSpot]:
        """The call sites in ``paths`` a static graph cannot follow (see
        :class:`BlindSpot`), by path then line: where a caller the graph does not list may
        hide."""
        out = [BlindSpot(e.caller_path, e.caller_symbol, e.line, e.callee_name)
               for p in sorted(set(paths)) for e in self.blind_by_path.get(p, ())]
        return sorted(set(out), key=lambda b: (b.path, b.line, b.what))

    def possible_callers(self, definition: DefinitionRef) -> list[Caller]:
        """Calls that may reach ``definition`` but are NOT counted by :meth:`callers`
        (depth 1, never expanded further): member calls of its name whose receiver could
        not be evaluated (``obj.update()`` with an untyped ``obj``: a ``dict``'s
        ``update`` as likely as this one), and plain unresolved calls of its name when
        the name is ambiguous in the repo."""
        resolved = {(c.path, c.symbol) for c in self.callers(definition, 1, "unique")}
        ambiguous = len(self.by_name.get(definition.name, ())) > 1
        return [c for c in self._direct(definition, "all" if ambiguous else "none", receiver_unknown=True)
                if not c.resolved and (c.path, c.symbol) not in resolved]
