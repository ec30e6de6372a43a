"""What changed: the commits of an indexed repository that touched some files or one
symbol in a time window, each with its author, date, message and the functions it
changed (``coderag changes``, ``/coderag changes``, the "Recent changes" note of ``ask``).

History is read from the repository's local Git directory (the mirror of a synced repo,
the work tree of one indexed from a local path: the ``root`` the index records), starting
at the indexed commit unless a ``ref`` is given. One date is used throughout: the
**commit date** (when the commit was made on its branch, rebased or imported: what puts
it in a window "since last week") decides the window, the order and what is shown. The
window is applied by walking the history and checking each commit's date, not with
``git log --since``, which stops at the first older commit and so drops commits of the
window that a rebase or an import put behind an older-dated one (see
:data:`MAX_STALE_RUN`). The changed functions of a commit are
found by parsing the old and the new version of each touched file with the call graph's
definition walkers (:func:`indexer.graph.facts.extract_file`: the same symbols ``impact``
knows) and intersecting the diff's hunks (``-U0``) with the definitions' line spans. The
operations of an OpenAPI/Swagger spec are definitions too (symbol ``GET /orders/{id}``,
the label of its search chunk): an edited, added or removed operation is a changed one.
"""
from __future__ import annotations

import re
import subprocess
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Sequence

from common.errors import BadInput
from common.timewindow import SINCE_FORMS, parse_since, question_since  # noqa: F401 - re-exported by indexer.read

#: ``--since`` forms (one parser for every command: :mod:`common.timewindow`).
SINCE_HELP = SINCE_FORMS
#: Most commits listed (newest first) and the longest a git call may take.
MAX_COMMITS = 50
GIT_TIMEOUT = 30.0
#: The walk stops after this many commits in a row dated before the window: commit dates
#: out of order (a rebased branch, an imported or cherry-picked series) put older-dated
#: commits between newer ones, but such a run is as long as the series, a few dozen
#: commits; 200 older ones in a row mean the walk has left the window.
MAX_STALE_RUN = 200
#: And it never reads more than this many commits of the paths' history (headers only).
MAX_WALKED = 5000
#: Files of one commit whose changed functions are computed (both versions parsed).
MAX_PARSED_FILES = 100
#: A symbol's commits are counted among the newest this many commits of its file (each
#: one's diff parsed); beyond it the count is a lower bound.
MAX_SYMBOL_SCAN = 300
#: A question asking what changed / who touched something (any language's identifiers).
_CHANGE_QUESTION = re.compile(
    r"\b(what|which)\b.{0,40}\b(changed?|changes|modified|updated)\b"
    r"|\bwho(?:'s|\s+has|\s+have)?\b.{0,20}\b(touched|changed|modified|edited|committed|worked\s+on|been\s+working)\b"
    r"|\b(recent|latest|last)\s+(changes|commits)\b|\bchanged\s+(recently|lately|since)\b",
    re.IGNORECASE)
#: The words of such a question that only ask about its history (who, when) or only point
#: at "the code" of what it names ("the retry logic"): its commits answer it, and the
#: other words name the code asked about.
CHANGE_WORDS = frozenset("""
who whom changed change changes touched touch modified edited updated committed commits commit
worked working work recently recent lately latest last today yesterday week weeks month months
this past previous since ago day days hour hours year years logic code
""".split())
def asks_what_changed(question: str) -> bool:
    """True when ``question`` asks what changed or who touched something recently
    ("what changed in billing?", "who touched the retry logic this week?")."""
    return bool(_CHANGE_QUESTION.search(question or ""))


@dataclass
class ChangedFunction:
    """A definition a commit changed, cited where it is: ``path:line@commit``."""

    path: str
    symbol: str
    line: int      # its first line at ``commit``
    change: str    # "modified", "added" or "deleted"
    commit: str = ""  # the commit those lines are in: the parent's for a deleted definition

    @property
    def citation(self) -> str:
        """``path:line@sha7``: where the definition is (a deleted one: in the parent commit)."""
        return f"{self.path}:{self.line}@{self.commit[:7]}"

    def to_dict(self) -> dict:
        """The JSON shape of ``coderag changes --json`` (``commit``: of ``line``)."""
        return {"path": self.path, "symbol": self.symbol, "line": self.line, "change": self.change,
                "commit": self.commit}


@dataclass
class CommitChange:
    repo: str
    sha: str
    author: str
    email: str
    date: str      # ISO 8601 commit date, UTC: the window, the order and what is shown
    message: str   # subject line
    files: list[str] = field(default_factory=list)
    functions: list[ChangedFunction] = field(default_factory=list)
    author_date: str = ""  # ISO 8601 author date, UTC (when it was first written), for reference

    def to_dict(self) -> dict:
        """The JSON shape of ``coderag changes --json``."""
        return {"repo": self.repo, "sha": self.sha, "author": self.author, "email": self.email, "date": self.date,
                "author_date": self.author_date, "message": self.message, "files": list(self.files),
                "functions": [f.to_dict() for f in self.functions],
                "citations": [f.citation for f in self.functions]}


@dataclass
class ChangesReport:
    """``kind``: ``path``, ``symbol`` or ``question``; ``targets``: what was looked at
    (``{"repo", "path", "start_line", "end_line", "symbol", "kind"}``: ``kind`` is the
    definition's (``function``, ``method``, ``class``…) for a symbol, ``""`` otherwise;
    a question's also have ``symbols``: the definitions of its hits in that file, best
    first, at most 3)."""

    query: str
    kind: str
    since: str
    targets: list[dict] = field(default_factory=list)
    #: The newest commits of the window (at most the ``limit`` asked for), with their functions.
    commits: list[CommitChange] = field(default_factory=list)
    #: How many commits of the window match: ``len(commits)`` unless the list was cut.
    total: int = 0
    #: False when ``total`` is a lower bound: the walk stopped at :data:`MAX_WALKED`
    #: commits, or a symbol's commits were counted in the newest :data:`MAX_SYMBOL_SCAN` only.
    exact: bool = True
    #: ``{author: [sha, …]}`` of every counted commit, newest first (not only the listed ones).
    authors: dict[str, list[str]] = field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        """True when the window holds more commits than :attr:`commits` lists."""
        return self.total > len(self.commits) or not self.exact

    def to_dict(self) -> dict:
        """The JSON shape of ``coderag changes --json``: ``total`` counts the window's
        commits, ``commits`` lists the newest of them, ``truncated`` says the list was cut
        and ``total_exact`` whether ``total`` is exact or a lower bound."""
        return {"query": self.query, "kind": self.kind, "since": self.since, "targets": self.targets,
                "total": self.total, "total_exact": self.exact, "truncated": self.truncated,
                "authors": {a: len(s) for a, s in self.authors.items()},
                "commits": [c.to_dict() for c in self.commits]}


# --------------------------------------------------------------------------- git
def _git(root: str, *args: str, timeout: float = GIT_TIMEOUT) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BadInput(f"git {args[0]} took longer than {timeout:.0f}s") from None
    if proc.returncode != 0:
        raise BadInput(f"git {args[0]} failed: {proc.stderr.decode('utf-8', 'replace').strip()[:200]}")
    return proc.stdout.decode("utf-8", "replace")


def _show(root: str, sha: str, path: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(root), "show", f"{sha}:{path}"], capture_output=True,
                              timeout=GIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None


#: A ref as a user may name one (branch, tag, sha, ``HEAD~3``): never an option (``--output=…``).
_REF = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/@{}~^-]{0,199}")


def check_ref(ref: str) -> str:
    """``ref`` when it names a ref; :class:`BadInput` otherwise (it goes to ``git log``)."""
    if not _REF.fullmatch(ref or "") or ".." in ref:
        raise BadInput(f"--ref: {ref!r} is no branch, tag or commit name")
    return ref


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _parse_log(text: str) -> list[tuple[list[str], dict[str, dict]]]:
    """``git log -U0`` output → per commit ``(header fields, {path: {"old": path, "old_lines": [(a, b)],
    "new_lines": [(c, d)]}})``."""
    out = []
    for block in text.split("\x1e")[1:]:
        head, _, diff = block.partition("\x1d")
        fields = head.strip("\n").split("\x1f")
        files: dict[str, dict] = {}
        cur = None
        old_path = None
        for line in diff.splitlines():
            if line.startswith("diff --git "):
                cur, old_path = None, None
            elif line.startswith("--- "):
                old_path = None if line[4:] == "/dev/null" else line[6:]
            elif line.startswith("+++ "):
                new_path = None if line[4:] == "/dev/null" else line[6:]
                key = new_path or old_path
                cur = files.setdefault(key, {"old": old_path, "new": new_path, "old_lines": [], "new_lines": []})
            elif cur is not None and line.startswith("@@"):
                m = _HUNK.match(line)
                if m:
                    a, b = int(m.group(1)), int(m.group(2) or 1)
                    c, d = int(m.group(3)), int(m.group(4) or 1)
                    if b:
                        cur["old_lines"].append((a, a + b - 1))
                    if d:
                        cur["new_lines"].append((c, c + d - 1))
        out.append((fields, files))
    return out


@dataclass(frozen=True)
class SpecOperation:
    """An operation of an OpenAPI/Swagger spec as a definition of its file: ``symbol`` is
    the label its search chunk carries (``GET /orders/{id}``), its lines the operation's."""

    symbol: str
    start_line: int
    end_line: int
    kind: str = "operation"


def _spec_operations(path: str, text: str) -> list[SpecOperation]:
    """The operations of ``text`` when it is an OpenAPI/Swagger spec (:mod:`indexer.chunking.openapi`);
    none for any other file and for a spec that does not parse or is malformed."""
    from .chunking.openapi import chunk_openapi, looks_like_openapi

    if not looks_like_openapi(path, text):
        return []
    try:
        ops = chunk_openapi(path, "json" if path.lower().endswith(".json") else "yaml", text)
    except Exception:  # noqa: BLE001 - MalformedSpec or odd YAML: no definitions from this side
        return []
    return [SpecOperation(op.symbol, op.start_line, op.end_line) for op in ops]


def _definitions(path: str, text: str | None) -> list:
    """The definitions of one version of a file: the call graph's (functions, methods,
    classes) and, for an OpenAPI/Swagger spec, its operations."""
    if text is None:
        return []
    from .graph.facts import extract_file

    facts = extract_file(path, text)
    return (list(facts.definitions) if facts else []) + _spec_operations(path, text)


def _touched(defs: list, ranges: list[tuple[int, int]]) -> dict[str, object]:
    """``{symbol: definition}`` of the innermost definition around each changed line range."""
    hit: dict[str, object] = {}
    for lo, hi in ranges:
        for line in range(lo, hi + 1):
            inside = [d for d in defs if d.start_line <= line <= d.end_line]
            if inside:
                d = min(inside, key=lambda d: (d.end_line - d.start_line, -d.start_line))
                hit.setdefault(d.symbol, d)
    return hit


def changed_functions(root: str, sha: str, parent: str | None, path: str, info: dict) -> list[ChangedFunction]:
    """The definitions of ``path`` that ``sha`` changed, from both sides of its diff."""
    old_defs = _definitions(info["old"], _show(root, parent, info["old"])) if parent and info["old"] else []
    new_defs = _definitions(info["new"], _show(root, sha, info["new"])) if info["new"] else []
    old_hit, new_hit = _touched(old_defs, info["old_lines"]), _touched(new_defs, info["new_lines"])
    old_names = {d.symbol for d in old_defs}
    new_names = {d.symbol for d in new_defs}
    out: list[ChangedFunction] = []
    for sym, d in new_hit.items():
        out.append(ChangedFunction(path, sym, d.start_line, "modified" if sym in old_names else "added", sha))
    for sym, d in old_hit.items():
        if sym in new_hit:
            continue
        if sym in new_names:  # lines removed from a definition that still exists
            nd = next(x for x in new_defs if x.symbol == sym)
            out.append(ChangedFunction(path, sym, nd.start_line, "modified", sha))
        else:  # gone from the commit: cited where it last was, in the parent
            out.append(ChangedFunction(info["old"], sym, d.start_line, "deleted", parent or ""))
    return sorted(out, key=lambda f: (f.path, f.line, f.symbol))


def _walk_window(root: str, ref: str, since: datetime, specs: Sequence[str]) -> tuple[list[list[str]], bool]:
    """``(headers, complete)``: the header fields (sha, parents, author, email, commit
    date, author date, subject) of the commits reachable from ``ref`` that touched
    ``specs`` and whose commit date is at or after ``since``, newest commit date first;
    ``complete`` is False when the walk read :data:`MAX_WALKED` commits without leaving
    the window (older window commits may lie beyond). Walks the history (headers only)
    and checks each commit's date, stopping after :data:`MAX_STALE_RUN` older commits in
    a row; the git process is stopped as soon as the walk is. A ``ref`` the repository
    lacks raises :class:`BadInput` naming it."""
    cmd = ["git", "-C", str(root), "log", "--no-color", f"--max-count={MAX_WALKED}",
           "--format=%H%x1f%P%x1f%an%x1f%ae%x1f%cI%x1f%aI%x1f%s", "--end-of-options", ref, "--", *specs]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    timer = threading.Timer(GIT_TIMEOUT, proc.kill)
    timer.start()
    picked: list[tuple[datetime, list[str]]] = []
    stale, stopped, read = 0, False, 0
    try:
        for raw in proc.stdout:  # type: ignore[union-attr]
            read += 1
            fields = raw.decode("utf-8", "replace").rstrip("\n").split("\x1f")
            if len(fields) < 7:
                continue
            try:
                when = datetime.fromisoformat(fields[4])
            except ValueError:
                continue
            if when >= since:
                picked.append((when, fields))
                stale = 0
            else:
                stale += 1
                if stale >= MAX_STALE_RUN:
                    stopped = True
                    break
        if stopped:
            proc.kill()
        err = proc.stderr.read() if not stopped else b""  # type: ignore[union-attr]
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    if not stopped and code != 0:
        if code < 0:
            raise BadInput(f"git log took longer than {GIT_TIMEOUT:.0f}s")
        message = err.decode("utf-8", "replace")
        if "unknown revision" in message or "bad revision" in message or "ambiguous argument" in message:
            raise BadInput(f"--ref: {ref!r} is no branch, tag or commit of this repository")
        raise BadInput(f"git log failed: {message.strip()[:200]}")
    picked.sort(key=lambda p: p[0], reverse=True)
    return [f for _w, f in picked], stopped or read < MAX_WALKED


def _utc(iso: str) -> str:
    """An ISO 8601 git date in UTC (``2026-07-15T08:27:42+00:00``), as every date is shown."""
    try:
        return datetime.fromisoformat(iso).astimezone(timezone.utc).isoformat()
    except ValueError:
        return iso


@dataclass
class CommitWindow:
    """What :func:`commits_touching` found: the newest ``commits`` (with their functions),
    how many commits of the window match (``total``; a lower bound when not ``exact``)
    and ``{author: [sha, …]}`` of all of them, newest first."""

    commits: list[CommitChange]
    total: int
    exact: bool
    authors: dict[str, list[str]]


def _diffs(root: str, shas: Sequence[str], specs: Sequence[str]) -> dict[str, dict[str, dict]]:
    """``{sha: {path: hunks}}`` of the commits ``shas`` restricted to ``specs`` (one git call)."""
    text = _git(root, "log", "--no-walk=unsorted", "--no-color", "--no-renames", "--no-ext-diff", "-U0",
                "--format=%x1e%H%x1d", *shas, "--", *specs)
    return {fields[0]: files for fields, files in _parse_log(text) if fields and fields[0]}


def commits_touching(root: str, repo: str, *, ref: str, since: datetime, paths: Sequence[str] = (),
                     symbol: str | None = None, limit: int = MAX_COMMITS) -> CommitWindow:
    """The commits reachable from ``ref`` whose commit date is at or after ``since`` that
    touched ``paths`` (a folder ends with ``/``; none = the whole repository), newest
    commit date first (:func:`_walk_window`); with ``symbol`` (in the one path given) only
    those that changed that definition (or, for a class, one of its members).

    The newest ``limit`` come with their changed functions; all are counted. A symbol's
    commits are found by diffing each commit, so they are counted among the newest
    :data:`MAX_SYMBOL_SCAN` commits of its file only (``exact`` False beyond that).
    Raises :class:`BadInput` for a ``ref`` the repository lacks or a git failure."""
    check_ref(ref)
    specs = [p.rstrip("/") or "." for p in paths]
    headers, complete = _walk_window(root, ref, since, specs)
    out: list[CommitChange] = []
    authors: dict[str, list[str]] = {}
    if symbol is None:
        for f in headers:
            authors.setdefault(f[2], []).append(f[0])
        todo, total = headers[:limit], len(headers)
    else:
        todo, total = headers[:MAX_SYMBOL_SCAN], 0
        complete = complete and len(headers) <= MAX_SYMBOL_SCAN
    # the diffs of the window's commits, a batch at a time (a symbol keeps only some of them)
    for i in range(0, len(todo), MAX_COMMITS):
        batch = todo[i:i + MAX_COMMITS]
        diffs = _diffs(root, [f[0] for f in batch], specs)
        for sha, parents, author, email, when, authored, subject in (f[:7] for f in batch):
            files = diffs.get(sha, {})
            parent = parents.split()[0] if parents.strip() else None
            funcs: list[ChangedFunction] = []
            for path, info in sorted(files.items())[:MAX_PARSED_FILES]:  # a huge commit: its first files
                if specs and specs != ["."] and not any(path == s or path.startswith(s + "/") for s in specs):
                    continue
                funcs += changed_functions(root, sha, parent, path, info)
            if symbol is not None:  # the definition, or a member of it (a class's methods)
                funcs = [f for f in funcs if f.symbol == symbol or f.symbol.startswith(symbol + ".")]
                if not funcs:
                    continue
                total += 1
                authors.setdefault(author, []).append(sha)
            if len(out) < limit:
                out.append(CommitChange(repo, sha, author, email, _utc(when), subject, sorted(files), funcs,
                                        _utc(authored)))
    return CommitWindow(out, total, complete, authors)
