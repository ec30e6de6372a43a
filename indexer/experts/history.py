"""Authorship from Git: ``git log --numstat`` into ``expert_changes``, and ``git blame``.

Identities are merged by the repo's ``.mailmap`` at the indexed commit (``%aN``/``%aE``
and blame's author lines both apply it; ``-c mailmap.blob=<commit>:.mailmap`` makes
that work in bare mirrors too). A commit does not count when its author matches
``CODERAG_EXPERTS_BOT_PATTERN`` (``bot``), its subject says it reformats
(:data:`REFORMAT`) or it is listed in ``.git-blame-ignore-revs`` (``reformat``), or it
touches at least ``CODERAG_EXPERTS_MASS_CHANGE_FILES`` files (``mass``); blame runs with
those commits in ``--ignore-revs-file``, so their lines go to the authors before them.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

REFORMAT = re.compile(r"\b(?:re-?format\w*|black|prettier|gofmt|isort|autopep8|clang-format|yapf|ruff format|"
                      r"code style|formatting|whitespace|lint fix(?:es)?)\b", re.I)


def _mailmap_args(root: str | Path, commit: str) -> list[str]:
    ok = subprocess.run(["git", "-C", str(root), "cat-file", "-e", f"{commit}:.mailmap"],
                        capture_output=True).returncode == 0
    return ["-c", f"mailmap.blob={commit}:.mailmap"] if ok else []


def ignore_revs(root: str | Path, commit: str) -> set[str]:
    """SHAs listed in the commit's ``.git-blame-ignore-revs`` (empty when absent)."""
    res = subprocess.run(["git", "-C", str(root), "show", f"{commit}:.git-blame-ignore-revs"], capture_output=True)
    if res.returncode != 0:
        return set()
    return {w.split()[0] for w in res.stdout.decode("utf-8", "replace").splitlines()
            if w.strip() and not w.startswith("#")}


def _new_path(p: str) -> str:
    """numstat's rename forms ``a => b`` and ``dir/{a => b}/f`` -> the new path."""
    m = re.match(r"^(.*)\{(.*) => (.*)\}(.*)$", p)
    if m:
        return re.sub("//+", "/", m.group(1) + m.group(3) + m.group(4))
    if " => " in p:
        return p.split(" => ", 1)[1]
    return p


def collect_changes(root: str | Path, commit: str, *, bot_pattern: str, mass_files: int,
                    since_days: int, base: str = "") -> list[dict]:
    """``expert_changes`` rows (without ``repo``) for the commits reachable from
    ``commit`` (not from ``base`` when given) of the last ``since_days`` days.

    Raises ``subprocess.CalledProcessError`` when ``commit`` is not in the repository.
    """
    bots = re.compile(bot_pattern, re.I)
    skip = ignore_revs(root, commit)
    rng = f"{base}..{commit}" if base else commit
    args = ["git", *_mailmap_args(root, commit), "-C", str(root), "log", "--no-merges", "--numstat", "-M",
            "--no-color", "--format=%x01%H%x02%at%x02%aN%x02%aE%x02%s", f"--since={since_days} days ago", rng]
    out = subprocess.run(args, check=True, capture_output=True).stdout.decode("utf-8", "replace")
    rows: list[dict] = []
    for block in out.split("\x01")[1:]:
        head, _, body = block.partition("\n")
        sha, at, name, email, subject = (head.split("\x02") + [""] * 5)[:5]
        when = datetime.fromtimestamp(int(at or 0), timezone.utc)
        files = []
        for line in body.splitlines():
            parts = line.split("\t")
            if len(parts) != 3:
                continue
            a, d, p = parts
            n = (int(a) if a.isdigit() else 0) + (int(d) if d.isdigit() else 0)
            files.append((_new_path(p), n))
        excluded = ""
        if bots.search(f"{name} <{email}>"):
            excluded = "bot"
        elif sha in skip or REFORMAT.search(subject):
            excluded = "reformat"
        elif len(files) >= mass_files:
            excluded = "mass"
        base_row = dict(commit=sha, author_name=name[:300], author_email=email.lower()[:300], committed_at=when)
        if excluded:
            rows.append({**base_row, "path": "", "lines": sum(n for _, n in files), "excluded": excluded})
        else:
            rows.extend({**base_row, "path": p[:1000], "lines": n, "excluded": ""} for p, n in files)
    return rows


@dataclass
class BlameShare:
    """Lines of a file (or line range) per author at the indexed commit, bots dropped."""

    total: int
    by_email: dict[str, int]
    names: dict[str, str]


def blame(root: str | Path, commit: str, path: str, *, start: int | None = None, end: int | None = None,
          ignore: set[str] = frozenset(), bot_pattern: str = "") -> BlameShare:
    """``git blame -w`` of ``path`` at ``commit`` (lines ``start``..``end`` when given),
    with the ``ignore`` commits skipped. Raises ``subprocess.CalledProcessError`` for a
    path that is not in the commit."""
    args = ["git", *_mailmap_args(root, commit), "-C", str(root), "blame", "--line-porcelain", "-w"]
    tmp = None
    if ignore:
        tmp = tempfile.NamedTemporaryFile("w", suffix=".revs", delete=False)
        tmp.write("\n".join(sorted(ignore)) + "\n")
        tmp.close()
        args += ["--ignore-revs-file", tmp.name]
    if start and end:
        args += ["-L", f"{start},{end}"]
    args += [commit, "--", path]
    try:
        out = subprocess.run(args, check=True, capture_output=True).stdout.decode("utf-8", "replace")
    finally:
        if tmp is not None:
            os.unlink(tmp.name)
    bots = re.compile(bot_pattern, re.I) if bot_pattern else None
    by: dict[str, int] = defaultdict(int)
    names: dict[str, str] = {}
    name = mail = sha = ""
    total = 0
    for line in out.splitlines():
        if len(line) > 41 and line[40] == " " and all(ch in "0123456789abcdef" for ch in line[:40]):
            sha = line[:40]
        elif line.startswith("author "):
            name = line[7:]
        elif line.startswith("author-mail "):
            mail = line[12:].strip("<>").lower()
        elif line.startswith("\t"):
            if sha in ignore or (bots is not None and bots.search(f"{name} <{mail}>")):
                continue  # a bot's line, or one an ignored commit wrote and git could not hand back
            total += 1
            by[mail] += 1
            names.setdefault(mail, name)
    return BlameShare(total, dict(by), names)
