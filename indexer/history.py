"""What changed: the commits of an indexed repository that touched some files or one
symbol in a time window, each with its author, date, message and the functions it
changed (``coderag changes``, ``/coderag changes``, the "Recent changes" note of ``ask``).

History is read from the repository's local Git directory (the mirror of a synced repo,
the work tree of one indexed from a local path: the ``root`` the index records), starting
at the indexed commit unless a ``ref`` is given. The changed functions of a commit are
found by parsing the old and the new version of each touched file with the call graph's
definition walkers (:func:`indexer.graph.facts.extract_file`: the same symbols ``impact``
knows) and intersecting the diff's hunks (``-U0``) with the definitions' line spans.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from typing import Collection, Iterable, Sequence

from common.errors import BadInput

#: ``--since`` forms: a number and a unit (hours, days, weeks), or an ISO date/time.
SINCE_HELP = "7d, 24h, 2w or an ISO date (2026-11-30)"
_RELATIVE = re.compile(r"(\d{1,5})\s*([hdw])")
_UNITS = {"h": "hours", "d": "days", "w": "weeks"}
#: Most commits listed (newest first) and the longest a git call may take.
MAX_COMMITS = 50
GIT_TIMEOUT = 30.0
#: Files of one commit whose changed functions are computed (both versions parsed).
MAX_PARSED_FILES = 100
#: A question asking what changed / who touched something (any language's identifiers).
_CHANGE_QUESTION = re.compile(
    r"\b(what|which)\b.{0,40}\b(changed?|changes|modified|updated)\b|\bwho\b.{0,20}\b(touched|changed|modified|edited)\b"
    r"|\b(recent|latest|last)\s+(changes|commits)\b|\bchanged\s+(recently|lately|since)\b",
    re.IGNORECASE)


def asks_what_changed(question: str) -> bool:
    """True when ``question`` asks what changed or who touched something recently."""
    return bool(_CHANGE_QUESTION.search(question or ""))


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``7d``/``24h``/``2w`` before ``now`` (UTC), or an ISO date (midnight UTC) or
    date-time; :class:`BadInput` (one line) for anything else."""
    t = (text or "").strip().lower()
    now = now or datetime.now(timezone.utc)
    m = _RELATIVE.fullmatch(t)
    if m:
        return now - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
    try:
        if len(t) == 10:
            return datetime.combine(date.fromisoformat(t), time(), tzinfo=timezone.utc)
        d = datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadInput(f"--since: {text!r} is no time window; use {SINCE_HELP}") from None
    return d if d.tzinfo else d.replace(tzinfo=timezone.utc)


@dataclass
class ChangedFunction:
    path: str
    symbol: str
    line: int      # first line in the commit (the old side's for a deleted definition)
    change: str    # "modified", "added" or "deleted"

    def to_dict(self) -> dict:
        return {"path": self.path, "symbol": self.symbol, "line": self.line, "change": self.change}


@dataclass
class CommitChange:
    repo: str
    sha: str
    author: str
    email: str
    date: str      # ISO 8601 author date
    message: str   # subject line
    files: list[str] = field(default_factory=list)
    functions: list[ChangedFunction] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"repo": self.repo, "sha": self.sha, "author": self.author, "email": self.email, "date": self.date,
                "message": self.message, "files": list(self.files),
                "functions": [f.to_dict() for f in self.functions],
                "citations": [f"{f.path}:{f.line}@{self.sha[:7]}" for f in self.functions]}


@dataclass
class ChangesReport:
    """``kind``: ``path``, ``symbol`` or ``question``; ``targets``: what was looked at
    (``{"repo", "path", "start_line", "end_line", "symbol"}``)."""

    query: str
    kind: str
    since: str
    targets: list[dict] = field(default_factory=list)
    commits: list[CommitChange] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"query": self.query, "kind": self.kind, "since": self.since, "targets": self.targets,
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


def _definitions(path: str, text: str | None) -> list:
    if text is None:
        return []
    from .graph.facts import extract_file

    facts = extract_file(path, text)
    return list(facts.definitions) if facts else []


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
        out.append(ChangedFunction(path, sym, d.start_line, "modified" if sym in old_names else "added"))
    for sym, d in old_hit.items():
        if sym in new_hit:
            continue
        if sym in new_names:  # lines removed from a definition that still exists
            nd = next(x for x in new_defs if x.symbol == sym)
            out.append(ChangedFunction(path, sym, nd.start_line, "modified"))
        else:
            out.append(ChangedFunction(path, sym, d.start_line, "deleted"))
    return sorted(out, key=lambda f: (f.path, f.line, f.symbol))


def commits_touching(root: str, repo: str, *, ref: str, since: datetime, paths: Sequence[str] = (),
                     symbol: str | None = None, limit: int = MAX_COMMITS) -> list[CommitChange]:
    """The commits reachable from ``ref`` committed at or after ``since`` that touched
    ``paths`` (a folder ends with ``/``; none = the whole repository), newest first; with
    ``symbol`` (in the one path given) only those that changed that definition."""
    check_ref(ref)
    specs = [p.rstrip("/") or "." for p in paths]
    text = _git(root, "log", f"--since={since.astimezone(timezone.utc).isoformat()}", f"--max-count={limit}",
                "--no-color", "--no-renames", "--no-ext-diff", "-U0",
                "--format=%x1e%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%s%x1d", "--end-of-options", ref, "--", *specs)
    out = []
    for fields, files in _parse_log(text):
        if len(fields) < 6:
            continue
        sha, parents, author, email, when, subject = fields[:6]
        parent = parents.split()[0] if parents.strip() else None
        funcs: list[ChangedFunction] = []
        for path, info in sorted(files.items())[:MAX_PARSED_FILES]:  # a huge commit: its first files
            if specs and specs != ["."] and not any(path == s or path.startswith(s + "/") for s in specs):
                continue
            funcs += changed_functions(root, sha, parent, path, info)
        if symbol is not None:
            funcs = [f for f in funcs if f.symbol == symbol]
            if not funcs:
                continue
        out.append(CommitChange(repo, sha, author, email, when, subject, sorted(files), funcs))
    return out


# --------------------------------------------------------------------------- resolving
def changes_report(sessions, settings, query: str, *, since: datetime, ref: str | None = None,
                   repo: str | None = None, allowed: Collection[str] | None = None,
                   locations: Iterable[tuple[str, str, int | None, int | None, str]] | None = None,
                   limit: int = MAX_COMMITS) -> ChangesReport | None:
    """What changed for ``query`` since ``since``: a path or folder of an indexed repo, a
    symbol of the call graph (its definition's file, only commits changing it), or, with
    ``locations`` (``(repo, path, start, end, label)`` of the question's top search hits),
    their files. ``None`` when ``query`` is neither a path nor a symbol and no
    ``locations`` are given (the caller retrieves them for the question)."""
    from .drift.service import knowledge_repos
    from .experts.service import resolve_target

    repos = knowledge_repos(sessions)
    report = ChangesReport(query=query, kind="question", since=since.astimezone(timezone.utc).isoformat())
    wanted: dict[str, list[str]] = {}
    symbol_of: dict[str, str] = {}
    if locations is None:
        names = [repo] if repo else sorted(allowed) if allowed is not None else [None]
        target = next((t for t in (resolve_target(sessions, query, n, settings=settings) for n in names) if t), None)
        if target is None or (allowed is not None and target[0] not in allowed):
            return None
        r, path, start, end, label = target
        report.kind = "path" if start is None else "symbol"
        wanted[r] = [path]
        if start is not None:
            symbol_of[r] = label.removesuffix("()")
        report.targets.append({"repo": r, "path": path, "start_line": start, "end_line": end,
                               "symbol": symbol_of.get(r, "")})
    else:
        for r, path, start, end, label in locations:
            if r not in repos or (allowed is not None and r not in allowed):
                continue
            if path not in wanted.setdefault(r, []) and sum(map(len, wanted.values())) < 3:
                wanted[r].append(path)
                report.targets.append({"repo": r, "path": path, "start_line": start, "end_line": end,
                                       "symbol": label or ""})
    for r, paths in wanted.items():
        row = repos.get(r)
        if row is None:
            continue
        report.commits += commits_touching(row.root, r, ref=ref or row.commit, since=since, paths=paths,
                                           symbol=symbol_of.get(r), limit=limit)
    report.commits.sort(key=lambda c: c.date, reverse=True)
    return report
