"""CODEOWNERS: who owns a path, GitHub and GitLab syntax.

Read from the indexed commit, first found of ``.github/CODEOWNERS``, ``CODEOWNERS``,
``docs/CODEOWNERS``, ``.gitlab/CODEOWNERS``. Patterns follow gitignore wildmatch rules
(``pathspec``'s ``gitignore`` flavour): ``/src/payments/`` is anchored, ``*.py`` matches
at any depth, ``docs/*`` only directly under ``docs/``. **The last matching line wins**
(a line with no owners un-owns the path). GitLab sections (``[Payments]``,
``^[Optional]``, ``[Docs][2] @default-owner``) each yield their own last match; the owners
of every matching section apply, section default owners fill lines without owners.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pathspec

LOCATIONS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS", ".gitlab/CODEOWNERS")
_SECTION = re.compile(r"^\^?\[([^\]]+)\](?:\[\d+\])?\s*(.*)$")


@dataclass(frozen=True)
class Rule:
    """One CODEOWNERS line: ``pattern`` as written, its ``owners`` (``@user``,
    ``@org/team`` or e-mail), its 1-based ``line`` and GitLab ``section`` (``""``)."""

    pattern: str
    owners: tuple[str, ...]
    line: int
    section: str = ""


def parse_codeowners(text: str) -> list[Rule]:
    """Rules of a CODEOWNERS file in file order (comments and blank lines skipped;
    ``\\#`` and ``\\ `` escapes kept in the pattern)."""
    rules = []
    section, defaults = "", ()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _SECTION.match(line)
        if m:
            section = m.group(1).strip()
            defaults = tuple(w for w in m.group(2).split() if not w.startswith("#"))
            continue
        parts = re.split(r"(?<!\\)\s+", line)
        owners = []
        for w in parts[1:]:
            if w.startswith("#"):
                break
            owners.append(w)
        rules.append(Rule(parts[0].replace("\\ ", " "), tuple(owners) or (defaults if section else ()), n, section))
    return rules


@lru_cache(maxsize=4096)
def _spec(pattern: str) -> pathspec.PathSpec:
    return pathspec.PathSpec.from_lines("gitignore", [pattern])


def owners_of(rules: list[Rule], path: str) -> list[tuple[Rule, str]]:
    """``[(rule, owner)]`` owning ``path`` (repo-relative): per section, the last
    matching rule. A directory path (``src/payments/``) matches as its files would."""
    probe = path if not path.endswith("/") else path + "x"
    last: dict[str, Rule] = {}
    for r in rules:
        if _spec(r.pattern).match_file(probe):
            last[r.section] = r
    out = []
    for r in last.values():
        out.extend((r, o) for o in r.owners)
    return out


def read_codeowners(root: str | Path, commit: str) -> tuple[str, list[Rule]]:
    """``(file path, rules)`` of the commit's CODEOWNERS, ``("", [])`` when there is none."""
    for loc in LOCATIONS:
        res = subprocess.run(["git", "-C", str(root), "show", f"{commit}:{loc}"], capture_output=True)
        if res.returncode == 0:
            return loc, parse_codeowners(res.stdout.decode("utf-8", "replace"))
    return "", []
