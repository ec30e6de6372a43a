"""The sources coderag keeps fresh, as its settings name them: a repository of
``CODERAG_REPOS`` (:class:`RepoConfig`) and a Confluence space of
``CODERAG_CONFLUENCE_SPACES`` (:class:`SpaceConfig`), and the parsing of those two
variables (the validators of :class:`common.settings.FreshnessSettings` and
:class:`common.settings.ConfluenceSettings` call it at start-up).

A repo entry: ``{"name": "api", "url": "https://github.com/org/api.git" (or a local
path), "branch": "main", "url_template": "https://github.com/org/api/blob/{commit}/{path}#L{start}-L{end}",
"aliases": ["org/api"]}``. ``name`` is the repo name in the index; a webhook matches an
entry by ``name``, ``aliases``, the payload's ``full_name``/``path_with_namespace`` or
its clone URLs equal to ``url``.

The parsers raise ``ValueError`` saying what is wrong (``repo #2 needs a "name" and a
"url"``); the settings turn it into the one-line ``BadInput`` naming the variable.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RepoConfig:
    """One repository kept fresh. ``url``: clone URL or local path; ``branch``: the
    only branch whose pushes are indexed."""

    name: str
    url: str
    branch: str = "main"
    url_template: str = ""
    aliases: tuple[str, ...] = ()

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
                                aliases=tuple(str(a) for a in item.get("aliases") or ())))
    names = [r.name for r in repos]
    if len(set(names)) != len(names):
        raise ValueError("repo names must be unique")
    return tuple(repos)


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
