"""Resolve references against the code, and find the commit that removed the stale ones.

:func:`lookup` decides ``ok`` (found, with ``path:line@sha``), ``unknown`` (cannot be
checked: an external program's flag, a platform variable, a library that is not in
the repo, a kind the repo has none of) or "missing". A missing reference is **stale**
only when the history shows it leaving the code: :func:`find_removals` reads the last
``max_commits`` commits in **one** ``git log -p -M -U0`` pass (docs excluded) and, for
every missing reference, keeps the newest commit in which a removed line (or a deleted
or renamed file) carried it. When that commit's added lines hold a line like the
removed one with the reference's word swapped (``--max-conn`` -> ``--max-connections``,
``/v1/refunds`` -> ``/v2/refunds``), the swapped-in name is the likely new name, kept
only if the current code has it. A missing reference the history never had is
``unknown`` ("not in the code or its last N commits": external, or misspelt).
"""
from __future__ import annotations

import difflib
import re
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from common.corners import is_corner

from .codeindex import CATCH_ALL, WORD, CodeIndex, Loc
from .extract import Reference, normalize_route

_TOKEN = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*|\S")
_STRLIT = re.compile(r"\"([^\"\\\n]{1,200})\"|'([^'\\\n]{1,200})'|`([^`\\\n]{1,200})`")
_METRIC_AUTO = ("_total", "_bucket", "_sum", "_count", "_created")


@dataclass
class Lookup:
    """Result of looking one reference up in the current code: ``status`` is ``ok``,
    ``unknown`` or ``missing``; ``repo``/``evidence`` (``path:line@sha``) where found."""

    status: str
    repo: str = ""
    evidence: str = ""
    note: str = ""


def _suffixes(idx: CodeIndex) -> set[str]:
    cached = getattr(idx, "_suffixes", None)
    if cached is None:
        cached = set()
        for p in list(idx.paths) + list(idx.dirs):
            parts = p.split("/")
            for i in range(len(parts)):
                cached.add("/".join(parts[i:]))
        idx._suffixes = cached  # type: ignore[attr-defined]
    return cached


def _metric_base(key: str) -> str:
    for suf in _METRIC_AUTO:
        if key.endswith(suf) and len(key) > len(suf) + 2:
            return key[:-len(suf)]
    return key


def _spec_method(idx: CodeIndex, method: str, route: str, loc: Loc, how: str) -> tuple[Loc | None, str]:
    """An endpoint whose route was found at ``loc``: found, unless the route's only
    evidence is OpenAPI/Swagger specs (no code string literal has it; code routes carry
    no method) and no spec operation of it has ``method``: then not found, with a reason
    naming the methods the specs have (``the spec has GET, not DELETE``)."""
    if route not in idx.spec_only_routes:
        return loc, how
    op = idx.spec_ops.get(f"{method} {route}")
    if op is not None:
        return op, how
    have = sorted(k.split(" ", 1)[0] for k in idx.spec_ops if k.split(" ", 1)[1] == route)
    return None, Absent(f"the spec has {', '.join(have)}, not {method}") if have else ""


class Absent(str):
    """A reason :func:`_find` gives for a reference that is **not there** (it is missing,
    and this says why), unlike its other reasons, which say it cannot be checked."""


def _find(idx: CodeIndex, kind: str, key: str) -> tuple[Loc | None, str]:
    """``(location, how)`` of ``key`` in one repo, or ``(None, reason it cannot be
    checked)`` with reason ``""`` when it simply is not there (an :class:`Absent` reason
    when it is not there and why is known: an endpoint whose route only a spec has, with
    other methods)."""
    if kind == "flag":
        loc = idx.flags.get(key) or idx.strings.get(key) or idx.strings.get("--" + key)
        return loc, ""
    if kind == "env":
        return idx.strings.get(key) or idx.words.get(key), ""
    if kind == "config":
        loc = idx.strings.get(key)
        if loc:
            return loc, ""
        segs = key.split(".")
        if segs[0] in idx.py_names:
            return _find(idx, "symbol", key)
        last = segs[-1]
        if last in idx.words and segs[0] in idx.words:
            return idx.words[last], "nested keys"
        return None, ""
    if kind == "endpoint":
        method, route = key.split(" ", 1)
        if not idx.routes:
            return None, "no HTTP routes in the code"
        loc = idx.routes.get(route)
        if loc:
            return _spec_method(idx, method, route, loc, "")
        for r, rloc in idx.routes.items():
            if len(r) > 3 and route.endswith(r) and r.count("/") >= 1 and route[:-len(r)].startswith("/"):
                return _spec_method(idx, method, r, rloc, "under a router prefix")
        return None, ""
    if kind == "metric":
        base = _metric_base(key)
        return (idx.strings.get(key) or idx.words.get(key) or idx.strings.get(base)
                or (idx.words.get(base) if base != key else None)), ""
    if kind == "symbol":
        if key in idx.modules:
            return (idx.modules[key], 1), ""
        segs = key.split(".")
        last = segs[-1]
        cands = idx.defs.get(last)
        if cands:
            tail = ".".join(segs[-2:]) if len(segs) > 1 else last
            best = next((d for d in cands if d[0].endswith(tail)), cands[0])
            return (best[1], best[2]), ""
        if last in idx.words:
            return idx.words[last], "not a definition"
        if len(segs) > 1 and segs[0] not in idx.py_names and segs[0] not in idx.defs and segs[0] not in idx.words:
            return None, f"{segs[0]} is not in the code (a library?)"
        return None, ""
    if kind == "path":
        p = key.rstrip("/")
        if p in idx.paths or p in idx.dirs:
            return (p, 1), ""
        if p in _suffixes(idx):
            full = next((q for q in idx.paths if q.endswith("/" + p)), None) or next(
                (q for q in idx.dirs if q.endswith("/" + p)), p)
            return (full, 1), ""
        return None, ""
    if kind == "target":
        if not idx.targets:
            return None, "no Makefile/package.json targets in the code"
        if key in idx.targets:
            return idx.targets[key], ""
        if CATCH_ALL in idx.targets:  # a pattern rule runs any target (``make html`` in Sphinx's docs/)
            return idx.targets[CATCH_ALL], "a catch-all %: rule in the Makefile"
        return None, ""
    return None, f"unknown kind {kind}"


def lookup(ref: Reference, indexes: list[CodeIndex]) -> Lookup:
    """Look ``ref`` up in each repo's code (first hit wins). See the module docstring."""
    if not indexes:
        return Lookup("unknown", note="no linked repository is indexed")
    reasons, absent = [], []
    for idx in indexes:
        loc, how = _find(idx, ref.kind, ref.key)
        if loc is not None:
            return Lookup("ok", idx.repo, idx.evidence(loc), how)
        if isinstance(how, Absent):
            absent.append(str(how))
        elif how:
            reasons.append(how)
    if ref.external:
        return Lookup("unknown", note="not the project's: an external program, the platform, or a name "
                                      "the doc's own example defines")
    if len(reasons) == len(indexes):
        return Lookup("unknown", note=reasons[0])
    owner = foreign_package(ref, indexes)
    if owner:
        return Lookup("unknown", note=f"belongs to {owner}, not to this repository's code")
    if ref.kind == "path" and ref.key.rstrip("/") in PROJECT_FILES:
        return Lookup("unknown", note="a file every project has: as likely the reader's own as this repository's")
    return Lookup("missing", note=absent[0] if absent else "")


#: Bare file names any project has: a doc naming one (``setup.py``, ``main.go``) most
#: often means the reader's project, so the repository losing its own is no drift.
PROJECT_FILES = frozenset("""
setup.py setup.cfg pyproject.toml requirements.txt manage.py app.py wsgi.py main.py conftest.py tox.ini
package.json tsconfig.json index.js index.ts main.go go.mod go.sum Makefile Dockerfile docker-compose.yml
pom.xml build.gradle Cargo.toml Gemfile .env config.py settings.py
""".split())


def foreign_package(ref: Reference, indexes: list[CodeIndex]) -> str:
    """The package a dotted symbol belongs to when it is not the repositories' own
    (``from sqlalchemy import Column``, ``:func:`werkzeug.utils.secure_filename```,
    ``tempfile.gettempdir``, an example's ``yourapplication.models``), else "". Its first
    component names no module, package or definition of theirs: the standard library, a
    dependency or a placeholder, which this repository's history cannot make stale."""
    imported = ref.ref.startswith(("from ", "import "))
    if ref.kind not in ("symbol", "config") or "." not in ref.key and not imported:
        return ""
    first = ref.key.split(".", 1)[0]
    if not (ref.ref.startswith(("from ", "import ", ":")) or any(i.py_names for i in indexes)):
        return ""  # not a Python module path: nothing to tell a package from an attribute by
    for idx in indexes:
        if first in idx.py_names or first in idx.defs or first in idx.modules:
            return ""
    return first


# --------------------------------------------------------------------------- history


@dataclass
class Removal:
    """The newest commit that took a reference out of the code. ``new_name``: the likely
    new name (``""`` when none is evident); ``path``: the file it was removed from."""

    commit: str
    committed_at: datetime
    summary: str
    path: str
    new_name: str = ""


def spec_removal(root: str | Path, commit: str, idx: CodeIndex, ref: Reference, *,
                 max_commits: int = 50) -> Removal | None:
    """The newest commit (among the last ``max_commits`` that touched the spec) that
    deleted the operation an endpoint reference names from the OpenAPI/Swagger spec that
    still holds its route with other methods (``DELETE /orders/{id}`` gone, ``GET`` kept),
    or ``None``. Read with :func:`indexer.history.commits_touching`, which sees a spec's
    operations as definitions on both sides of each diff; path parameters compare
    blanked (``{id}`` = ``{orderId}``)."""
    if ref.kind != "endpoint" or " " not in ref.key:
        return None
    method, route = ref.key.split(" ", 1)
    loc = idx.routes.get(route)
    if loc is None or route not in idx.spec_only_routes:
        return None
    from ..history import commits_touching

    window = commits_touching(str(root), idx.repo, ref=commit, since=datetime(1970, 1, 1, tzinfo=timezone.utc),
                              paths=[loc[0]], limit=max_commits)
    for c in window.commits:  # newest first
        for f in c.functions:
            op_method, _, op_path = f.symbol.partition(" ")
            if f.change == "deleted" and op_method.upper() == method.upper() and normalize_route(op_path) == route:
                return Removal(c.sha, datetime.fromisoformat(c.date), c.message, f.path)
    return None


@dataclass
class _Needle:
    ref: Reference
    core: str
    removal: Removal | None = None
    candidates: list = field(default_factory=list)  # (removed line, hunk added lines, path)

    def matches(self, line: str, path: str) -> bool:
        """Whether removing ``line`` of ``path`` removed what the reference names: a
        definition of it in the repository's own code (not a test, an example, a CI
        file), by kind: a ``def``/``class``/assignment/key/parameter of a symbol or
        config key, a string or read of an environment variable, a flag's option string."""
        k, key = self.ref.kind, self.ref.key
        if not _product_code(path):
            return False
        if k in ("symbol", "config", "env"):
            return _defines(line, self.core, k)
        if k == "flag":  # an option string: "--name", or a bare "name" given to a flag/option API
            return bool(re.search(rf"[\"'`]--{re.escape(key)}(?![\w-])", line)) or \
                (f'"{key}"' in line or f"'{key}'" in line) and bool(_OPTION_API.search(line))
        if k == "endpoint":
            route = key.split(" ", 1)[1]
            return any(normalize_route(s) == route for s in _strings(line) if s.startswith("/"))
        if k == "target":
            base = path.rsplit("/", 1)[-1].lower()
            return base in ("makefile", "gnumakefile", "justfile", "package.json") or base.endswith(".mk")
        return True  # the core word was already matched as a whole word


_OPTION_API = re.compile(r"flag|option|argument|add_arg|param", re.I)


def _product_code(path: str) -> bool:
    """A file of the product itself: not a test, an example, a benchmark or CI configuration."""
    return not is_corner(path)


def _defines(line: str, name: str, kind: str) -> bool:
    """Whether ``line`` defines ``name``: ``def``/``class``/``func``/``type``… ``name``, an
    assignment or annotation ``name =``/``name:``, a parameter ``name=``/``name:`` in a
    signature line, a key ``"name":`` / ``name:`` or, for configuration and environment
    names, the name as a whole string (an environment read ``environ["NAME"]``, ``config.get("name")``)."""
    n = re.escape(name)
    if re.search(rf"\b(?:def|class|func|function|fn|type|interface|struct|enum|trait|const|let|var|val|"
                 rf"module|object)\s+(?:\([^)]*\)\s*)?\*?{n}\b", line):
        return True
    # an assignment `name = …` / `name: T = …` (not a call's `name=value,` continuation line)
    if re.match(rf"^\s*(?:self\.|this\.|export\s+|public\s+|private\s+|static\s+|final\s+)*{n}"
                rf"(?:\s*:[^=]*=|\s+=|\s*:=)(?!=)", line) and not line.rstrip().endswith(","):
        return True
    if re.match(rf"^\s*{n}\s*:", line):  # an annotated parameter, a field or a key on its own line
        return True
    if re.search(rf"\bdef\s+\w+\s*\(.*[(,]\s*\**{n}\s*[:=,)]", line):
        return True
    if re.search(rf"[\"']{n}[\"']\s*:", line):
        return True
    if kind in ("config", "env") and re.search(rf"[\"']{n}[\"']", line):
        return True
    return False


def _strings(line: str) -> list[str]:
    return [m.group(1) or m.group(2) or m.group(3) for m in _STRLIT.finditer(line)]


def _core(ref: Reference) -> str:
    if ref.kind == "endpoint":
        segs = [s for s in ref.key.split(" ", 1)[1].split("/") if s and s != "{}"]
        return WORD.findall(segs[-1])[-1] if segs and WORD.findall(segs[-1]) else ""
    if ref.kind in ("config", "symbol"):
        return ref.key.split(".")[-1]
    if ref.kind == "metric":
        return ref.key
    if ref.kind == "path":
        return ref.key.rstrip("/")
    return ref.key


NEW_NAME_SIMILARITY = 0.4  # difflib ratio, case-folded, of the old and the suggested name


def _name_similarity(old: str, new: str) -> float:
    """How alike two names are, 0..1 (difflib ratio of the case-folded names)."""
    return difflib.SequenceMatcher(None, old.lower(), new.lower(), autojunk=False).ratio()


def _new_name(needle: _Needle, removed: str, added: list[str]) -> str:
    """The word of the most similar added line that took the place of the reference."""
    best, best_ratio = None, 0.0
    for a in added[:2000]:
        r = difflib.SequenceMatcher(None, removed.strip(), a.strip(), autojunk=False).ratio()
        if r > best_ratio:
            best, best_ratio = a, r
    if best is None or best_ratio < 0.5:
        return ""
    ref = needle.ref
    if ref.kind == "endpoint":
        old = ref.key.split(" ", 1)[1]
        routes = [normalize_route(s) for s in _strings(best) if s.startswith("/")]
        routes = [r for r in routes if r != old]
        if not routes:
            return ""
        route = max(routes, key=lambda r: difflib.SequenceMatcher(None, old, r).ratio())
        return f"{ref.key.split(' ', 1)[0]} {route}"
    rt, at = _TOKEN.findall(removed), _TOKEN.findall(best)
    core = needle.core
    if core not in rt:
        return ""
    i = rt.index(core)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, rt, at, autojunk=False).get_opcodes():
        if i1 <= i < i2:
            if tag != "replace":
                return ""
            words = [t for t in at[j1:j2] if WORD.fullmatch(t)]
            if not words:
                return ""
            new = max(words, key=lambda w: difflib.SequenceMatcher(None, core, w).ratio())
            if new == core or _name_similarity(core, new) < NEW_NAME_SIMILARITY:
                return ""  # a different word on a similar line is not a rename (ENV -> context)
            if ref.kind in ("config", "symbol") and "." in ref.key:
                return ref.key.rsplit(".", 1)[0] + "." + new
            return new
    return ""


_DOC_DIRS = re.compile(r"(?:^|/)(?:docs?|documentation|site|website)/", re.I)
_DOC_EXT = re.compile(r"\.(?:md|markdown|mdx|rst|txt|myt|html?|tex|adoc|asciidoc|textile|po|pot)$", re.I)


def _doc_like(path: str) -> bool:
    """Docs of any era (``doc/build/content/x.myt``): their lines are not the code."""
    base = path.rsplit("/", 1)[-1].upper()
    return bool(_DOC_EXT.search(path) or _DOC_DIRS.search(path)
                or base.startswith(("CHANGES", "CHANGELOG", "NEWS", "HISTORY", "README", "RELEASE")))


def find_removals(root: str | Path, commit: str, refs: list[Reference], *, max_commits: int = 3000,
                  exclude_docs: bool = True, base: str = "") -> dict[int, Removal]:
    """``{position in refs: Removal}`` for the refs the last ``max_commits`` commits
    before (and including) ``commit`` removed, from one ``git log -p`` pass (only the
    commits after ``base`` when given).

    Merge commits are skipped (their changes are in the merged commits). Raises
    ``subprocess.CalledProcessError`` when ``commit`` is not in the repository at ``root``.
    """
    needles: dict[str, list[tuple[int, _Needle]]] = {}
    paths: list[tuple[int, _Needle]] = []
    for i, ref in enumerate(refs):
        core = _core(ref)
        if not core:
            continue
        nd = _Needle(ref, core)
        if ref.kind == "path":
            paths.append((i, nd))
        else:
            needles.setdefault(core, []).append((i, nd))
    found: dict[int, Removal] = {}
    if not needles and not paths:
        return found
    args = ["git", "-C", str(root), "log", "-p", "-M", "-U0", "--no-merges", "--no-color", "--no-ext-diff",
            "--format=%x01%H%x02%at%x02%s", f"--max-count={max_commits}",
            f"{base}..{commit}" if base else commit, "--", "."]
    if exclude_docs:
        args += [f":(exclude,glob)**/*.{e}" for e in ("md", "markdown", "mdx", "rst", "txt")]
        args += [f":(exclude)*.{e}" for e in ("md", "markdown", "mdx", "rst", "txt")]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    cur: tuple[str, datetime, str] | None = None
    path = ""
    removed: list[str] = []
    added: list[str] = []
    commit_added: list[str] = []
    hits: list[tuple[int, _Needle, str, list[str], str]] = []
    rename_from = ""
    skip_file = False

    def flush_hunk():
        nonlocal removed, added
        if removed and cur is not None:
            for line in removed:
                for w in set(WORD.findall(line)):
                    lst = needles.get(w)
                    if not lst:
                        continue
                    for i, nd in list(lst):
                        if nd.matches(line, path):
                            hits.append((i, nd, line, list(added), path))
                            lst.remove((i, nd))
                    if not lst:
                        needles.pop(w, None)
        removed, added = [], []

    def flush_commit():
        nonlocal hits, commit_added
        flush_hunk()
        if cur is not None:
            for i, nd, line, hunk_added, p in hits:
                new = _new_name(nd, line, hunk_added or commit_added)
                found[i] = Removal(cur[0], cur[1], cur[2], p, new)
        hits, commit_added = [], []

    def path_event(old: str, new: str | None):
        if not _product_code(old):
            return  # an example's or a test's file: not what a doc's path names
        for i, nd in list(paths):
            key = nd.ref.key.rstrip("/")
            if old == key or old.endswith("/" + key) or old.startswith(key + "/"):
                moved = ""
                if new:
                    moved = new if old == key or old.endswith("/" + key) else new[:len(new) - len(old) + len(key)]
                found[i] = Removal(cur[0], cur[1], cur[2], old, moved)
                paths.remove((i, nd))

    try:
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith("\x01"):
                flush_commit()
                if not needles and not paths:
                    break
                sha, at, subject = (line[1:].split("\x02") + ["", ""])[:3]
                cur = (sha, datetime.fromtimestamp(int(at or 0), timezone.utc), subject[:500])
                continue
            if line.startswith("diff --git "):
                flush_hunk()
                m = re.match(r"diff --git a/(.*) b/(.*)$", line)
                path = m.group(2) if m else ""
                rename_from = ""
                skip_file = exclude_docs and _doc_like(path)
                continue
            if skip_file and not line.startswith(("deleted file", "rename ")):
                continue
            if line.startswith("@@"):
                flush_hunk()
                continue
            if line.startswith("deleted file mode") and paths and cur is not None:
                path_event(path, None)
                continue
            if line.startswith("rename from "):
                rename_from = line[len("rename from "):]
                continue
            if line.startswith("rename to ") and rename_from and paths and cur is not None:
                path_event(rename_from, line[len("rename to "):])
                continue
            if line.startswith("---") or line.startswith("+++"):
                continue
            if line.startswith("-"):
                removed.append(line[1:])
            elif line.startswith("+"):
                added.append(line[1:])
                if len(commit_added) < 5000:
                    commit_added.append(line[1:])
        flush_commit()
    finally:
        proc.stdout.close()
        proc.kill() if proc.poll() is None else None
        proc.wait()
    return found
