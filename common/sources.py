"""The sources coderag keeps fresh, as its settings name them: a repository of
``CODERAG_REPOS`` (:class:`RepoConfig`) and a Confluence space of
``CODERAG_CONFLUENCE_SPACES`` (:class:`SpaceConfig`), and the parsing of those two
variables (the validators of :class:`common.settings.FreshnessSettings` and
:class:`common.settings.ConfluenceSettings` call it at start-up).

A repo entry: ``{"name": "api", "url": "https://github.com/org/api.git" (or a local
path), "branch": "main", "url_template": "https://github.com/org/api/blob/{commit}/{path}#L{start}-L{end}",
"aliases": ["org/api"], "refs": ["v*", "release/4.x"], "max_refs": 5}``. ``name`` is the
repo name in the index; a webhook matches an entry by ``name``, ``aliases``, the
payload's ``full_name``/``path_with_namespace`` or its clone URLs equal to ``url``.
``refs`` (optional): release tag patterns (globs on tag names, the newest ``max_refs``
tags of each pattern) and branch names indexed besides ``branch``, each as a ref source
``<name>@<ref>`` that shares the default branch's unchanged chunks
(:mod:`indexer.sources.refs`).

The parsers raise ``ValueError`` saying what is wrong (``repo #2 needs a "name" and a
"url"``); the settings turn it into the one-line ``BadInput`` naming the variable.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path


#: Newest tags indexed per ``refs`` pattern of a repo entry when it sets no ``max_refs``,
#: and the highest ``max_refs`` accepted.
DEFAULT_MAX_REFS = 5
MAX_MAX_REFS = 50
#: A ``refs`` entry: a tag glob or a branch name (never an option, no ``..``, no ``@{``).
_REF_ENTRY = re.compile(r"[A-Za-z0-9_*?\[][A-Za-z0-9._/*?\[\]!+-]{0,199}")


@dataclass(frozen=True)
class RepoConfig:
    """One repository kept fresh. ``url``: clone URL or local path; ``branch``: the
    default branch, indexed as the source ``name``. ``refs``: tag patterns (``fnmatch``
    globs on tag names, e.g. ``v*``) and branch names also indexed, each as the ref
    source ``name@ref``; ``max_refs``: the newest tags kept per pattern (by tag date)."""

    name: str
    url: str
    branch: str = "main"
    url_template: str = ""
    aliases: tuple[str, ...] = ()
    refs: tuple[str, ...] = ()
    max_refs: int = DEFAULT_MAX_REFS

    def matches(self, identifiers: set[str]) -> bool:
        """True when any payload identifier (name, full name, clone URL) names this repo."""
        mine = {self.name, self.url, *self.aliases}
        norm = {_norm_url(x) for x in mine}
        return bool(mine & identifiers) or bool(norm & {_norm_url(x) for x in identifiers})


def _norm_url(u: str) -> str:
    u = u.strip().rstrip("/")
    return u[:-4] if u.endswith(".git") else u


@dataclass(frozen=True)
class SpaceConfig:
    """One Confluence source: a space ``key`` (the source name in the index) or, with
    ``cql``, any page set (then ``key`` is only the name). ``ttl_hours``: re-sync period."""

    key: str
    ttl_hours: float = 24.0
    cql: str = ""


def parse_repos(raw: str) -> tuple[RepoConfig, ...]:
    """``CODERAG_REPOS`` (inline JSON, or a path to a .json/.yaml/.yml file) -> repos.
    ``ValueError`` on a missing file, malformed JSON/YAML or entries, or repeated names."""
    raw = raw.strip()
    if not raw:
        return ()
    if raw[0] in "[{":
        data = _json(raw)
    else:
        path = Path(raw).expanduser()
        if not path.is_file():
            raise ValueError("no such file")
        text = path.read_text(encoding="utf-8")
        if path.suffix in (".yaml", ".yml"):
            import yaml

            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise ValueError(f"not valid YAML ({str(exc).splitlines()[0]})") from None
        else:
            data = _json(text)
    if isinstance(data, dict):
        data = data.get("repos", [])
    if not isinstance(data, list):
        raise ValueError("not a list of repos")
    repos = []
    for n, item in enumerate(data):
        if not isinstance(item, dict) or not item.get("name") or not item.get("url"):
            raise ValueError(f"repo #{n + 1} needs a \"name\" and a \"url\"")
        repos.append(RepoConfig(name=str(item["name"]), url=str(item["url"]),
                                branch=str(item.get("branch") or "main"),
                                url_template=str(item.get("url_template") or ""),
                                aliases=tuple(str(a) for a in item.get("aliases") or ()),
                                **_ref_options(item)))
    names = [r.name for r in repos]
    if len(set(names)) != len(names):
        raise ValueError("repo names must be unique")
    return tuple(repos)


def _ref_options(item: dict) -> dict:
    """``{"refs", "max_refs"}`` of a repo entry that sets them (``{}`` otherwise, so an
    entry without refs is the same :class:`RepoConfig` as before refs existed).
    ``ValueError`` for a ``refs`` that is not a list of tag globs / branch names or a
    ``max_refs`` outside 1..:data:`MAX_MAX_REFS`."""
    out: dict = {}
    name = item["name"]
    refs = item.get("refs")
    if refs is not None:
        if isinstance(refs, str) or not isinstance(refs, (list, tuple)):
            raise ValueError(f"refs of repo {name!r} must be a list of tag patterns or branch names")
        refs = [ref.removeprefix("refs/tags/").removeprefix("refs/heads/") if isinstance(ref, str) else ref
                for ref in refs]  # a full ref name is its tag or branch name
        for ref in refs:
            if not isinstance(ref, str) or not _REF_ENTRY.fullmatch(ref) or ".." in ref or ref.endswith((".", "/")):
                raise ValueError(f"refs of repo {name!r}: {ref!r} is no tag pattern or branch name")
            if ref.count("[") != ref.count("]") or re.search(r"\[[^\]]*\[", ref):
                raise ValueError(f"refs of repo {name!r}: {ref!r} is no usable pattern (an unclosed '[')")
        out["refs"] = tuple(dict.fromkeys(refs))
    if item.get("max_refs") is not None:
        limit = item["max_refs"]
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_MAX_REFS:
            raise ValueError(f"max_refs of repo {name!r} must be a whole number from 1 to {MAX_MAX_REFS}")
        out["max_refs"] = limit
    return out


def parse_spaces(raw: str, ttl_hours: float) -> tuple[SpaceConfig, ...]:
    """``CODERAG_CONFLUENCE_SPACES`` (``KEY1,KEY2`` or a JSON list of ``{"key",
    "ttl_hours"?, "cql"?}``) -> spaces; a space without its own ``ttl_hours`` gets
    ``ttl_hours``. ``ValueError`` on malformed JSON or entries."""
    raw = raw.strip()
    if not raw.startswith("["):
        return tuple(SpaceConfig(key=k.strip(), ttl_hours=ttl_hours) for k in raw.split(",") if k.strip())
    spaces = []
    for n, item in enumerate(_json(raw)):
        if isinstance(item, str):
            item = {"key": item}
        if not isinstance(item, dict) or not item.get("key"):
            raise ValueError(f"space #{n + 1} needs a \"key\"")
        try:
            item_ttl = float(item.get("ttl_hours") or ttl_hours)
        except (TypeError, ValueError):
            raise ValueError(f"ttl_hours of {item['key']!r} must be a number") from None
        spaces.append(SpaceConfig(key=str(item["key"]), ttl_hours=item_ttl, cql=str(item.get("cql") or "")))
    return tuple(spaces)


def _json(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at character {exc.pos + 1})") from None
