"""``impact``: who calls a symbol, directly and transitively, and which tests exercise it.

Reads the call graph the indexer stored in SQL (through ``indexer``'s public functions).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Collection, Sequence

from common.errors import BadInput, CoderagError, EmptyIndex, ExitCode
import indexer.read

from .refs import default_repos, ref_graphs, repo_at_ref, sql_bases

if TYPE_CHECKING:
    from indexer.read import CallGraph, DefinitionRef

DEFAULT_DEPTH = 3
MAX_DEPTH = 10


class UnknownSymbol(CoderagError):
    """No definition matches the symbol asked about."""

    exit_code = ExitCode.UNKNOWN_SYMBOL


class AmbiguousSymbol(CoderagError):
    """Several definitions match; the user must pick one (``candidates``)."""

    exit_code = ExitCode.AMBIGUOUS_SYMBOL

    def __init__(self, message: str, candidates: list[tuple[str, DefinitionRef]]):
        super().__init__(message)
        self.candidates = candidates


@dataclass
class Target:
    repo: str
    definition: DefinitionRef
    graph: CallGraph


def candidate_label(repo: str, d: DefinitionRef) -> str:
    """``repo:path:line  Symbol (kind)``: a label that is also a valid impact query."""
    return f"{d.path}:{d.start_line}  {d.symbol} ({d.kind}, repo {repo})"


def find_target(sessions, symbol: str, repo: str | None = None,
                allowed: Collection[str] | None = None, *, among: Sequence[str] | None = None) -> Target:
    """The one definition ``symbol`` names. ``symbol`` is ``Class.method``,
    ``module.func``, a bare name or ``path:line``. Looked up in ``repo``, else in
    ``among`` (e.g. the ref sources of ``--ref``), else in every repository's default
    branch (never in its named refs).

    Raises :class:`UnknownSymbol` (with close names as suggestions), :class:`AmbiguousSymbol`
    (with the candidates) or ``EmptyIndex``-like :class:`BadInput` when no graph exists.
    """
    repos = ([repo] if repo else list(among) if among is not None
             else default_repos(indexer.read.indexed_repos(sessions), sessions))
    if allowed is not None:  # channel allow-list (bot.tenancy): other sources do not exist here
        repos = [r for r in repos if r in allowed]
        if not repos:
            raise UnknownSymbol(f"no definition of {symbol!r} in the sources this channel may read")
    if not repos:
        raise BadInput("no call graph is indexed yet: run `coderag index PATH` first")
    found: list[tuple[str, DefinitionRef, CallGraph]] = []
    names: set[str] = set()
    for r in repos:
        graph = indexer.read.load_graph(sessions, r)
        if graph is None:
            if repo:  # the same error, and exit code, as `ask`/`search --repo` with an unknown repo
                known = sorted(default_repos(indexer.read.indexed_repos(sessions), sessions))
                if allowed is not None:
                    known = [k for k in known if k in allowed]
                raise EmptyIndex(f"no indexed repo named {r} (indexed: {', '.join(known) or 'none'})")
            continue
        found += [(r, d, graph) for d in graph.find_definitions(symbol)]
        names.update(graph.by_name)
    if not found:
        last = symbol.rsplit(".", 1)[-1].split(":")[0]
        close = difflib.get_close_matches(last, sorted(names), n=5, cutoff=0.75)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownSymbol(f"no definition of {symbol!r} in {', '.join(repos)}{hint}")
    if len(found) > 1:
        raise AmbiguousSymbol(
            f"{symbol!r} matches {len(found)} definitions; name one of them (e.g. path:line):\n"
            + "\n".join("  " + candidate_label(r, d) for r, d, _ in found),
            [(r, d) for r, d, _ in found])
    r, d, g = found[0]
    return Target(repo=r, definition=d, graph=g)


def impact_report(sessions, symbol: str, *, repo: str | None = None, depth: int = DEFAULT_DEPTH,
                  allowed: Collection[str] | None = None, expand_possible: bool = False,
                  ref: str | None = None) -> dict:
    """Callers of ``symbol`` up to ``depth`` as the ``--json`` contract:
    ``{"symbol", "repo", "commit", "definitions": [{"path","start_line","end_line"}],
    "callers": [{"path","symbol","line","depth","is_test","resolved"}],
    "possible_callers": [...], "unmapped_imports": [{"path","line","module"}]}``.
    ``possible_callers`` are calls of the name whose receiver could not be evaluated, or
    plain calls of a name other definitions share (listed, not counted, and not expanded
    unless ``expand_possible``: then their own callers up to ``depth`` join the list, each
    ``resolved: false`` and one hop deeper);
    ``unmapped_imports`` are imports of the repository's own modules that map to none
    of them (calls through them are missing). A caller is ``resolved: false`` when it
    was matched by name, or reached through one that was; ``via`` says how it calls
    (``call``, ``decorator``: it is decorated by the target, ``value``: through an alias,
    a container, a returned function, ``callback``: through a parameter it was passed).
    ``blind_spots`` (``[{"path","symbol","line","what"}]``): call sites in the target's
    and the callers' files that a static graph cannot follow (where more callers may hide).

    ``ref``: the callers at the repositories' named ref ``ref`` (its call graph, stored
    whole at the ref's commit; ``repo`` then names the repository): ``repo`` and
    ``commit`` of the report are the ref source's (``shop@v2``) and the ref's commit.

    Raises :class:`BadInput` for a depth outside 1..MAX_DEPTH or an unknown ``ref``
    (listing the indexed refs), and the errors of :func:`find_target`.
    """
    if not 1 <= depth <= MAX_DEPTH:
        raise BadInput(f"--depth must be between 1 and {MAX_DEPTH}, got {depth}")
    if ref is not None or (repo and "@" in repo):  # --repo shop@v2 reads as --repo shop --ref v2
        repo, ref = repo_at_ref(repo, ref, sql_bases(sessions))
    if ref is not None:
        names = ref_graphs(sessions, ref, repo=repo, allowed=allowed)
        t = find_target(sessions, symbol, None, None if allowed is None else set(allowed) | set(names), among=names)
    else:
        t = find_target(sessions, symbol, repo, allowed)
    d = t.definition
    callers = t.graph.callers(d, depth=depth)
    possible = t.graph.possible_callers(d)
    if expand_possible:
        possible = _expand(t.graph, d, callers, possible, depth)
    as_dict = lambda c: {"path": c.path, "symbol": c.symbol, "line": c.line, "depth": c.depth,  # noqa: E731
                         "is_test": c.is_test, "resolved": c.resolved, "via": c.via}
    return {
        "symbol": d.symbol, "repo": t.repo, "commit": indexer.read.repo_commit(sessions, t.repo),
        "kind": d.kind,
        "definitions": [{"path": d.path, "start_line": d.start_line, "end_line": d.end_line}],
        "callers": [as_dict(c) for c in callers],
        "possible_callers": [as_dict(c) for c in possible],
        "unmapped_imports": [{"path": p, "line": n, "module": m} for p, n, m in t.graph.unmapped_imports()],
        "blind_spots": [b.to_dict() for b in t.graph.blind_spots({d.path} | {c.path for c in callers})],
    }


def _expand(graph, target, callers: list, possible: list, depth: int) -> list:
    """``possible`` followed by the callers of each possible caller up to ``depth`` in
    all, each a guess (``resolved=False``), none already listed."""
    seen = {(target.path, target.symbol)} | {(c.path, c.symbol) for c in callers + possible}
    out = list(possible)
    for p in possible:
        ref = graph.definitions.get((p.path, p.symbol))
        if ref is None or depth < 2:
            continue
        for c in graph.callers(ref, depth - 1):
            if (c.path, c.symbol) not in seen:
                seen.add((c.path, c.symbol))
                out.append(replace(c, depth=c.depth + 1, resolved=False))
    return out


#: Blind spots and possible callers shown in the text report (``--json`` has them all).
BLIND_SHOWN = 10
POSSIBLE_SHOWN = 15


def format_report(report: dict) -> str:
    """Plain-text rendering: callers grouped by file, then "tests affected" apart."""
    d = report["definitions"][0]
    lines = [f"{report['symbol']} ({report['kind']}) at {d['path']}:{d['start_line']}-{d['end_line']}"
             f"@{report['commit'][:7]} in {report['repo']}"]
    code = [c for c in report["callers"] if not c["is_test"]]
    tests = [c for c in report["callers"] if c["is_test"]]

    def group(items: list[dict]) -> list[str]:
        out: list[str] = []
        by_file: dict[str, list[dict]] = {}
        for c in items:
            by_file.setdefault(c["path"], []).append(c)
        for path in sorted(by_file):
            out.append(f"  {path}")
            for c in sorted(by_file[path], key=lambda c: (c["depth"], c["line"])):
                flag = "" if c["resolved"] else "  (matched by name)"
                if c.get("via") == "decorator":  # "it" is the target only at depth 1
                    flag += "  (decorated by it)" if c["depth"] == 1 else "  (through a decoration)"
                out.append(f"    L{c['line']:<5} {c['symbol'] or '<module>'}  depth {c['depth']}{flag}")
        return out

    direct = sum(1 for c in code if c["depth"] == 1)
    blind = report.get("blind_spots") or []
    maybe = f" - may be incomplete: {len(blind)} call site(s) below cannot be followed" if blind else ""
    lines.append(f"\nCallers: {len(code)} ({direct} direct){maybe}")
    lines += group(code) or ["  none found"]
    lines.append(f"\nTests affected: {len(tests)}")
    lines += group(tests) or ["  none found"]
    if report.get("possible_callers"):
        lines.append(f"\nPossible callers (a call of this name whose receiver is unknown, or a name other "
                     f"definitions share; not counted above, nothing built on them): "
                     f"{len(report['possible_callers'])}")
        possible = report["possible_callers"]
        lines += group(possible[:POSSIBLE_SHOWN])
        if len(possible) > POSSIBLE_SHOWN:
            lines.append(f"  … and {len(possible) - POSSIBLE_SHOWN} more (--json lists them all)")
    if blind:
        lines.append(f"\nBlind spots (calls in these files a static graph cannot follow: a value nothing is "
                     f"known of, getattr/eval): {len(blind)}")
        for b in blind[:BLIND_SHOWN]:
            lines.append(f"  {b['path']}:{b['line']}  {b['symbol'] or '<module>'} calls {b['what']}")
        if len(blind) > BLIND_SHOWN:
            lines.append(f"  … and {len(blind) - BLIND_SHOWN} more (--json lists them all)")
    unmapped = report.get("unmapped_imports") or []
    if unmapped:
        shown = ", ".join(f"{u['path']}:{u['line']} {u['module']}" for u in unmapped[:3])
        lines.append(f"\nIncomplete: {len(unmapped)} import(s) of this repository's own modules map to none "
                     f"of them (e.g. {shown}); calls made through them are missing above.")
    return "\n".join(lines) + "\n"
