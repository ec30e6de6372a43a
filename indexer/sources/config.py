"""Freshness configuration: the repos and Confluence spaces kept fresh, parsed from the
variables of :class:`common.settings.FreshnessEnv` and :class:`common.settings.ConfluenceEnv`
(declared there with their types, defaults and descriptions).

A repo entry: ``{"name": "api", "url": "https://github.com/org/api.git" (or a local
path), "branch": "main", "url_template": "https://github.com/org/api/blob/{commit}/{path}#L{start}-L{end}",
"aliases": ["org/api"]}``. ``name`` is the repo name in the index; a webhook matches an
entry by ``name``, ``aliases``, the payload's ``full_name``/``path_with_namespace`` or
its clone URLs equal to ``url``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from common.errors import BadInput
from common.settings import DEFAULT_WEBHOOK_MAX_BYTES, ConfluenceEnv, FreshnessEnv


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


@dataclass(frozen=True)
class ConfluenceConfig:
    """Connection to one Confluence site. Cloud when ``email`` and ``api_token`` are set,
    Data Center (bearer PAT) when ``pat`` is."""

    url: str
    email: str = ""
    api_token: str = ""
    pat: str = ""
    spaces: tuple[SpaceConfig, ...] = ()
    overlap_minutes: float = 1440.0
    reconcile_hours: float = 168.0
    max_retries: int = 5

    @property
    def cloud(self) -> bool:
        return bool(self.email and self.api_token)

    def space(self, key: str) -> SpaceConfig:
        """The configured space ``key``; raises ``BadInput`` when it is not configured."""
        for s in self.spaces:
            if s.key == key:
                return s
        raise BadInput(f"Confluence space {key!r} is not configured (CODERAG_CONFLUENCE_SPACES)")


@dataclass(frozen=True)
class FreshnessConfig:
    """Everything the freshness subsystem is configured with (see the module table)."""

    repos: tuple[RepoConfig, ...] = ()
    github_secret: str = ""
    gitlab_token: str = ""
    webhook_max_bytes: int = DEFAULT_WEBHOOK_MAX_BYTES
    safety_minutes: float = 60.0
    confluence: ConfluenceConfig | None = None
    index_queue: str = "threads"

    @property
    def webhooks_enabled(self) -> bool:
        return bool(self.repos and (self.github_secret or self.gitlab_token))

    def repo(self, name: str) -> RepoConfig:
        """The configured repo ``name``; raises ``BadInput`` when unknown."""
        for r in self.repos:
            if r.name == name:
                return r
        raise BadInput(f"repo {name!r} is not configured (CODERAG_REPOS); known: "
                       f"{', '.join(r.name for r in self.repos) or 'none'}")

    @classmethod
    def from_settings(cls, freshness: FreshnessEnv, confluence: ConfluenceEnv) -> "FreshnessConfig":
        """From the freshness and Confluence groups read at start-up (``AppSettings.freshness``,
        ``AppSettings.confluence``). Raises ``BadInput`` on malformed JSON/YAML or entries."""
        f = freshness
        return cls(repos=tuple(parse_repos(f.repos)), github_secret=f.github_secret, gitlab_token=f.gitlab_token,
                   webhook_max_bytes=f.webhook_max_bytes, safety_minutes=f.safety_minutes,
                   confluence=_confluence(confluence), index_queue=f.index_queue)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "FreshnessConfig":
        """:meth:`from_settings` on the groups read from the environment (or ``env``) now
        (tests and benchmarks; ``coderag`` hands its settings down). Raises ``BadInput`` on
        malformed values, JSON/YAML or entries."""
        return cls.from_settings(FreshnessEnv.from_env(env), ConfluenceEnv.from_env(env))


def parse_repos(raw: str) -> list[RepoConfig]:
    """``CODERAG_REPOS`` (inline JSON, or a path to a .json/.yaml/.yml file) -> repos."""
    raw = raw.strip()
    if not raw:
        return []
    if raw[0] in "[{":
        data, where = _json(raw, "CODERAG_REPOS"), "CODERAG_REPOS"
    else:
        path = Path(raw).expanduser()
        if not path.is_file():
            raise BadInput(f"CODERAG_REPOS: {raw}: no such file")
        text, where = path.read_text(encoding="utf-8"), str(path)
        if path.suffix in (".yaml", ".yml"):
            import yaml

            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise BadInput(f"{where}: not valid YAML ({str(exc).splitlines()[0]})") from None
        else:
            data = _json(text, where)
    if isinstance(data, dict):
        data = data.get("repos", [])
    if not isinstance(data, list):
        raise BadInput(f"{where}: expected a list of repos")
    repos = []
    for n, item in enumerate(data):
        if not isinstance(item, dict) or not item.get("name") or not item.get("url"):
            raise BadInput(f"{where}: repo #{n + 1} needs a \"name\" and a \"url\"")
        repos.append(RepoConfig(name=str(item["name"]), url=str(item["url"]),
                                branch=str(item.get("branch") or "main"),
                                url_template=str(item.get("url_template") or ""),
                                aliases=tuple(str(a) for a in item.get("aliases") or ())))
    names = [r.name for r in repos]
    if len(set(names)) != len(names):
        raise BadInput(f"{where}: repo names must be unique")
    return repos


def _json(text: str, where: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{where}: not valid JSON ({exc.msg})") from None


def _confluence(c: ConfluenceEnv) -> ConfluenceConfig | None:
    url = c.url.strip()
    if not url:
        return None
    ttl = c.ttl_hours
    raw = c.spaces.strip()
    spaces: list[SpaceConfig] = []
    if raw.startswith("["):
        for item in _json(raw, "CODERAG_CONFLUENCE_SPACES"):
            if isinstance(item, str):
                item = {"key": item}
            if not isinstance(item, dict) or not item.get("key"):
                raise BadInput("CODERAG_CONFLUENCE_SPACES: each entry needs a \"key\"")
            try:
                item_ttl = float(item.get("ttl_hours") or ttl)
            except (TypeError, ValueError):
                raise BadInput(f"CODERAG_CONFLUENCE_SPACES: ttl_hours of {item['key']!r} must be a number") from None
            spaces.append(SpaceConfig(key=str(item["key"]), ttl_hours=item_ttl, cql=str(item.get("cql") or "")))
    else:
        spaces = [SpaceConfig(key=k.strip(), ttl_hours=ttl) for k in raw.split(",") if k.strip()]
    cfg = ConfluenceConfig(url=url.rstrip("/"), email=c.email, api_token=c.api_token, pat=c.pat,
                           spaces=tuple(spaces), overlap_minutes=c.overlap_minutes,
                           reconcile_hours=c.reconcile_hours)
    if not cfg.cloud and not cfg.pat:
        raise BadInput("CODERAG_CONFLUENCE_URL is set but no credentials: set CODERAG_CONFLUENCE_EMAIL + "
                       "CODERAG_CONFLUENCE_API_TOKEN (Cloud) or CODERAG_CONFLUENCE_PAT (Data Center)")
    return cfg
