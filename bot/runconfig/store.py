"""The run-time configuration in the database (:class:`RunConfig`): seeded from the
environment, read by the bot at question time, changed on the admin page, every change
written to the change log in the same transaction as the change itself.

Seeding (:meth:`RunConfig.seed`) copies in each source, channel and value the database
has never held (a removed one keeps a tombstone row, so it is not seeded back); it is
idempotent and safe to run from every replica at start-up.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterable

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from common.errors import BadInput

from .models import (DEFAULT_CHANNEL, REPLY_MODES, ChannelPolicyRow, ConfigChange, ConfigSource, ConfigValue)

if TYPE_CHECKING:
    from common.settings import AppSettings, FreshnessSettings

log = logging.getLogger(__name__)

#: The actor of changes seeded from the environment.
ENVIRONMENT = "environment"
REVIEW_CHANNEL = "review_channel"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")
_CHANNEL = re.compile(r"^(\*|[A-Z0-9][A-Z0-9_-]{0,39})$")
#: A Teams channel or chat id as the channel policy keys it (:func:`bot.teams.app.policy_channel`):
#: ``19:…@thread.tacv2`` (a channel), ``19:…@thread.v2`` (a group chat), ``a:…`` (a personal chat).
_TEAMS_CHANNEL = re.compile(r"^[0-9a-z]{1,3}:[A-Za-z0-9._@:=-]{1,250}$")


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class SourceEntry:
    """A configured source as the page and the freshness config see it."""

    name: str
    kind: str = "git"
    url: str = ""
    branch: str = "main"
    url_template: str = ""
    aliases: tuple[str, ...] = ()
    ttl_hours: float | None = None
    cql: str = ""
    origin: str = "admin"

    def public(self) -> dict[str, Any]:
        """The entry as shown on a page (no credentials: a URL's password is masked)."""
        from common.redact import redact_text

        return {"name": self.name, "kind": self.kind, "url": redact_text(self.url), "branch": self.branch,
                "url_template": self.url_template, "aliases": list(self.aliases), "ttl_hours": self.ttl_hours,
                "cql": self.cql, "origin": self.origin}


@dataclass(frozen=True)
class ChannelEntry:
    """One channel's policy: ``sources`` (``None``: no allow-list of its own) and its reply mode."""

    channel: str
    sources: tuple[str, ...] | None = None
    reply_mode: str = "mention"
    origin: str = "admin"


@dataclass
class Seed:
    """What the environment says, to copy into an empty database."""

    sources: list[SourceEntry] = field(default_factory=list)
    channels: list[ChannelEntry] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, app: "AppSettings", review_channel: str = "") -> "Seed":
        """The seed in ``app`` (the settings read at start-up): ``CODERAG_REPOS``, the
        Confluence spaces, ``CODERAG_CHANNEL_SOURCES``, ``CODERAG_ONBOARDING_CHANNELS``
        (reply mode ``questions``) and ``review_channel``. Raises ``BadInput`` on a
        malformed value (as start-up does)."""
        from ..tenancy import ChannelPolicy

        fresh = app.freshness
        fresh.check()
        sources = [SourceEntry(name=r.name, kind="git", url=r.url, branch=r.branch, url_template=r.url_template,
                               aliases=tuple(r.aliases), origin="env") for r in fresh.repos]
        if fresh.confluence is not None:
            sources += [SourceEntry(name=s.key, kind="confluence", ttl_hours=s.ttl_hours, cql=s.cql, origin="env")
                        for s in fresh.confluence.spaces]
        rules = ChannelPolicy.from_settings(app.chat).rules or {}
        onboarding = set(app.slack.onboarding_channels)
        channels = [ChannelEntry(channel=c, sources=tuple(sorted(s)),
                                 reply_mode="questions" if c in onboarding else "mention", origin="env")
                    for c, s in rules.items()]
        channels += [ChannelEntry(channel=c, sources=None, reply_mode="questions", origin="env")
                     for c in sorted(onboarding - set(rules))]
        return cls(sources=sources, channels=channels,
                   values={REVIEW_CHANNEL: review_channel} if review_channel else {})


def _json_list(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        return ()
    return tuple(str(x) for x in data) if isinstance(data, list) else ()


def check_source_name(name: str) -> str:
    """``name`` stripped; ``BadInput`` unless it is a usable source name."""
    name = (name or "").strip()
    if not _NAME.match(name):
        raise BadInput(f"source name {name!r}: use letters, digits, '.', '_', '-' or '/' (at most 200)")
    return name


def check_channel(channel: str) -> str:
    """``channel`` stripped (a Slack id upper-cased); ``BadInput`` unless it is a Slack
    channel id (``C0123``, ``G…``, ``D…``), a Teams channel or chat id (``19:…@thread.tacv2``,
    kept as it is) or ``*`` (every other channel)."""
    channel = (channel or "").strip()
    if is_teams_channel(channel):
        return channel
    if channel != DEFAULT_CHANNEL:
        channel = channel.upper()
    if not _CHANNEL.match(channel):
        raise BadInput(f"channel {channel!r}: give a Slack channel id such as C0123ABCD, a Teams channel id "
                       "(19:…@thread.tacv2), or * for every other channel")
    return channel


def is_teams_channel(channel: str) -> bool:
    """True for a Teams channel or chat id (``19:…@thread.tacv2``, ``a:…``)."""
    return bool(_TEAMS_CHANNEL.match(channel or ""))


class RunConfig:
    """The run-time configuration on a session factory (migrated to head)."""

    def __init__(self, sessions: sessionmaker):
        self.sessions = sessions

    # ------------------------------------------------------------------ change log
    @staticmethod
    def _log(s: Session, actor: str, action: str, target: str, detail: dict | None = None) -> None:
        s.add(ConfigChange(at=_now(), actor=(actor or "unknown")[:200], action=action, target=target[:200],
                           detail=json.dumps(detail or {}, ensure_ascii=False, default=str)))

    def record(self, actor: str, action: str, target: str, detail: dict | None = None) -> None:
        """Write one change-log line on its own (an action that changes no row here:
        a re-sync requested, golden cases exported, a sign-in)."""
        with self.sessions() as s, s.begin():
            self._log(s, actor, action, target, detail)

    def changes(self, limit: int = 200) -> list[dict]:
        """The newest ``limit`` change-log lines, newest first."""
        with self.sessions() as s:
            rows = s.scalars(select(ConfigChange).order_by(ConfigChange.at.desc(), ConfigChange.id.desc())
                             .limit(limit)).all()
        return [{"id": r.id, "at": r.at, "actor": r.actor, "action": r.action, "target": r.target,
                 "detail": json.loads(r.detail or "{}")} for r in rows]

    # ------------------------------------------------------------------ seeding
    def seed(self, seed: Seed) -> int:
        """Bring the entries the environment owns in line with ``seed``; returns how many
        rows changed. An entry is the environment's (``origin`` ``env``) until someone
        changes or removes it on the page (then ``admin``: the environment never touches
        it again). So: a new entry is added, an environment entry whose value changed is
        updated, one no longer in the environment is removed, and one the environment
        removed comes back when it names it again. Logged as changes by ``environment``;
        idempotent, and safe when several replicas start at once."""
        changed = 0
        for src in seed.sources:
            # the database keeps the URL with its credentials masked: the secret stays in the
            # environment, and freshness() takes it from there
            values = {k: v for k, v in _source_values(src).items() if k != "name"}
            values["url"] = _masked(values["url"])
            changed += self._seed_row(ConfigSource, src.name, values, "source")
        for ch in seed.channels:
            changed += self._seed_row(ChannelPolicyRow, ch.channel, {
                "sources": None if ch.sources is None else json.dumps(list(ch.sources)), "reply_mode": ch.reply_mode},
                "channel")
        for name, value in seed.values.items():
            changed += self._seed_row(ConfigValue, name, {"value": value}, "value")
        changed += self._unseed(ConfigSource, {e.name for e in seed.sources}, "source")
        changed += self._unseed(ChannelPolicyRow, {c.channel for c in seed.channels}, "channel")
        if changed:
            log.info("run-time configuration: %d entries brought in line with the environment", changed)
        return changed

    @staticmethod
    def _key(model):
        return {ConfigSource: ConfigSource.name, ChannelPolicyRow: ChannelPolicyRow.channel,
                ConfigValue: ConfigValue.name}[model]

    def _seed_row(self, model, key: str, values: dict, what: str) -> int:
        now = _now()
        try:
            with self.sessions() as s, s.begin():
                row = s.scalar(select(model).where(self._key(model) == key))
                if row is None:
                    extra = {"created_at": now} if model is ConfigSource else {}
                    s.add(model(**{self._key(model).key: key}, **values, origin="env", updated_at=now, **extra))
                    self._log(s, ENVIRONMENT, f"{what}.seed", key, _shown(values))
                    return 1
                if row.origin != "env":
                    return 0  # changed or removed on the page: the page's
                current = {k: getattr(row, k) for k in values}
                revived = getattr(row, "deleted_at", None) is not None
                if current == values and not revived:
                    return 0
                for k, v in values.items():
                    setattr(row, k, v)
                if revived:
                    row.deleted_at = None
                row.updated_at = now
                self._log(s, ENVIRONMENT, f"{what}.seed", key, {"before": _shown(current), "after": _shown(values)})
                return 1
        except IntegrityError:  # another replica seeded it first
            return 0

    def _unseed(self, model, keep: set[str], what: str) -> int:
        n = 0
        with self.sessions() as s, s.begin():
            for row in s.scalars(select(model).where(model.origin == "env", model.deleted_at.is_(None))):
                key = getattr(row, self._key(model).key)
                if key not in keep:
                    row.deleted_at = row.updated_at = _now()
                    self._log(s, ENVIRONMENT, f"{what}.unseed", key, {})
                    n += 1
        return n

    # ------------------------------------------------------------------ sources
    def sources(self, *, include_deleted: bool = False) -> list[SourceEntry]:
        """The configured sources, by name (removed ones only with ``include_deleted``)."""
        with self.sessions() as s:
            stmt = select(ConfigSource).order_by(ConfigSource.name)
            if not include_deleted:
                stmt = stmt.where(ConfigSource.deleted_at.is_(None))
            return [_source_entry(r) for r in s.scalars(stmt)]

    def add_source(self, entry: SourceEntry, *, actor: str) -> SourceEntry:
        """Add (or bring back a removed) source; ``BadInput`` for a bad entry or a name in use."""
        name = check_source_name(entry.name)
        if entry.kind not in ("git", "confluence"):
            raise BadInput(f"source kind {entry.kind!r}: git or confluence")
        if entry.kind == "git" and not entry.url.strip():
            raise BadInput("a repository needs a clone URL or a local path")
        if entry.kind == "git" and not _CLONE_URL.match(entry.url.strip()):
            raise BadInput(f"{_masked(entry.url.strip())!r} is not a clone URL (https://, ssh://, git@host:path, "
                           "file:// or an absolute local path)")
        if entry.kind == "git" and _masked(entry.url.strip()) != entry.url.strip():
            raise BadInput("a password in the clone URL would be kept in the database: name the repository in "
                           "CODERAG_REPOS (the environment keeps the secret) or use a URL without one "
                           "(a Git credential helper or an SSH key)")
        if entry.url_template and "{path}" not in entry.url_template:
            raise BadInput("the browse URL template has no {path} placeholder")
        entry = replace(entry, name=name, url=entry.url.strip(), branch=(entry.branch or "main").strip(),
                        origin="admin")
        with self.sessions() as s, s.begin():
            row = s.scalar(select(ConfigSource).where(ConfigSource.name == name))
            if row is not None and row.deleted_at is None:
                raise BadInput(f"a source named {name!r} is already configured")
            if row is None:
                s.add(_source_row(entry, "admin"))
            else:  # a removed one, added again
                for k, v in _source_values(entry).items():
                    setattr(row, k, v)
                row.origin, row.deleted_at, row.updated_at = "admin", None, _now()
            self._log(s, actor, "source.add", name, entry.public())
        return entry

    def remove_source(self, name: str, *, actor: str) -> None:
        """Stop keeping ``name`` fresh (its index stays until ``coderag remove``);
        ``BadInput`` when it is not configured."""
        with self.sessions() as s, s.begin():
            row = s.scalar(select(ConfigSource).where(ConfigSource.name == name, ConfigSource.deleted_at.is_(None)))
            if row is None:
                raise BadInput(f"no configured source named {name!r}")
            row.deleted_at = row.updated_at = _now()
            row.origin = "admin"
            self._log(s, actor, "source.remove", name, _source_entry(row).public())

    def freshness(self, base: "FreshnessSettings") -> "FreshnessSettings":
        """``base`` (the environment's freshness group: secrets, Confluence connection,
        queue) with the repositories and spaces configured here (what ``coderag sync``
        and the scheduler keep fresh)."""
        from common.sources import RepoConfig, SpaceConfig

        entries = self.sources()
        # a URL kept masked is the environment's: its credentials come from there
        env_urls = {r.name: r.url for r in base.repos}

        def url_of(e: SourceEntry) -> str:
            env_url = env_urls.get(e.name)
            return env_url if env_url is not None and _masked(env_url) == e.url else e.url

        # named refs (release tags, branches) are set in CODERAG_REPOS only: kept from there
        env_refs = {r.name: {"refs": r.refs, "max_refs": r.max_refs} for r in base.repos if r.refs}
        repos = tuple(RepoConfig(name=e.name, url=url_of(e), branch=e.branch, url_template=e.url_template,
                                 aliases=e.aliases, **env_refs.get(e.name, {})) for e in entries if e.kind == "git")
        confluence = base.confluence
        if confluence is not None:
            default_ttl = {s.key: s.ttl_hours for s in confluence.spaces}
            spaces = tuple(SpaceConfig(key=e.name, ttl_hours=e.ttl_hours or default_ttl.get(e.name,
                                                                                         confluence.ttl_hours),
                                       cql=e.cql) for e in entries if e.kind == "confluence")
            confluence = confluence.model_copy(update={"spaces": spaces})
        return base.model_copy(update={"repos": repos, "confluence": confluence})

    # ------------------------------------------------------------------ channels
    def channels(self) -> list[ChannelEntry]:
        """Every channel policy (``*`` first, then by channel id)."""
        with self.sessions() as s:
            rows = s.scalars(select(ChannelPolicyRow).where(ChannelPolicyRow.deleted_at.is_(None))).all()
        out = [ChannelEntry(channel=r.channel, sources=_json_list(r.sources), reply_mode=r.reply_mode,
                            origin=r.origin) for r in rows]
        return sorted(out, key=lambda c: (c.channel != DEFAULT_CHANNEL, c.channel))

    def channel(self, channel: str) -> ChannelEntry | None:
        """One channel's own policy (``None`` when it has none)."""
        with self.sessions() as s:
            r = s.get(ChannelPolicyRow, channel)
        if r is None or r.deleted_at is not None:
            return None
        return ChannelEntry(channel=r.channel, sources=_json_list(r.sources), reply_mode=r.reply_mode, origin=r.origin)

    def set_channel(self, channel: str, *, sources: Iterable[str] | None, reply_mode: str,
                    actor: str) -> ChannelEntry:
        """Set ``channel``'s allow-list (``None``: none of its own) and reply mode; logs
        the before and after. ``BadInput`` for a bad channel id or mode."""
        channel = check_channel(channel)
        if reply_mode not in REPLY_MODES:
            raise BadInput(f"reply mode {reply_mode!r}: one of {', '.join(REPLY_MODES)}")
        if reply_mode == "questions" and is_teams_channel(channel):
            raise BadInput(f"{channel} is a Teams channel: Teams sends a bot only the channel messages that "
                           "mention it, so it cannot answer every question there (personal chats are always "
                           "answered); choose mention only or draft for review")
        new = None if sources is None else sorted({check_source_name(x) for x in sources})
        with self.sessions() as s, s.begin():
            row = s.get(ChannelPolicyRow, channel, with_for_update=True)
            before = None if row is None or row.deleted_at else {"sources": None if row.sources is None else
                                                                 list(_json_list(row.sources) or ()),
                                                                 "reply_mode": row.reply_mode}
            if row is None:
                row = ChannelPolicyRow(channel=channel, origin="admin", updated_at=_now())
                s.add(row)
            row.sources = None if new is None else json.dumps(new)
            row.reply_mode, row.deleted_at, row.updated_at, row.origin = reply_mode, None, _now(), "admin"
            self._log(s, actor, "channel.set", channel,
                      {"before": before, "after": {"sources": new, "reply_mode": reply_mode}})
        return ChannelEntry(channel=channel, sources=None if new is None else tuple(new), reply_mode=reply_mode)

    def remove_channel(self, channel: str, *, actor: str) -> None:
        """Remove ``channel``'s own policy (it then follows ``*``); ``BadInput`` when it has none."""
        with self.sessions() as s, s.begin():
            row = s.get(ChannelPolicyRow, channel)
            if row is None or row.deleted_at is not None:
                raise BadInput(f"channel {channel!r} has no policy of its own")
            row.deleted_at = row.updated_at = _now()
            row.origin = "admin"
            self._log(s, actor, "channel.remove", channel, {"before": {"sources": _json_list(row.sources),
                                                                       "reply_mode": row.reply_mode}})

    # ------------------------------------------------------------------ values
    def value(self, name: str, default: str = "") -> str:
        """The run-time value ``name`` (``default`` when unset)."""
        with self.sessions() as s:
            row = s.get(ConfigValue, name)
        return row.value if row is not None else default

    def set_value(self, name: str, value: str, *, actor: str) -> None:
        """Set the run-time value ``name`` (logged with the value before)."""
        with self.sessions() as s, s.begin():
            row = s.get(ConfigValue, name)
            before = row.value if row is not None else None
            if row is None:
                s.add(ConfigValue(name=name, value=value, origin="admin", updated_at=_now()))
            else:
                row.value, row.origin, row.updated_at = value, "admin", _now()
            self._log(s, actor, "value.set", name, {"before": before, "after": value})


#: What a clone URL looks like: a scheme Git speaks, scp-like ``user@host:path``, or an absolute path.
_CLONE_URL = re.compile(r"^(?:(?:https?|ssh|git|file)://\S+|[\w.-]+@[\w.-]+:\S+|/\S*)$")


def _masked(url: str | None) -> str | None:
    """``url`` with the password of its user part masked (``user:***@host``)."""
    from common.redact import redact_url

    return redact_url(url) if url else url


def _shown(values: dict) -> dict:
    """Values as the change log keeps them (a URL's credentials masked, JSON text decoded)."""
    from common.redact import redact_text

    out = {}
    for k, v in values.items():
        if k in ("sources", "aliases") and isinstance(v, str):
            v = json.loads(v)
        elif k == "url" and isinstance(v, str):
            v = redact_text(v)
        out[k] = v
    return out


def _source_values(e: SourceEntry) -> dict[str, Any]:
    return dict(name=e.name, kind=e.kind, url=e.url, branch=e.branch or "main", url_template=e.url_template,
                aliases=json.dumps(list(e.aliases)), ttl_hours=e.ttl_hours, cql=e.cql or None)


def _source_row(e: SourceEntry, origin: str) -> ConfigSource:
    now = _now()
    return ConfigSource(origin=origin, created_at=now, updated_at=now, **_source_values(e))


def _source_entry(r: ConfigSource) -> SourceEntry:
    return SourceEntry(name=r.name, kind=r.kind, url=r.url, branch=r.branch, url_template=r.url_template,
                       aliases=_json_list(r.aliases) or (), ttl_hours=r.ttl_hours, cql=r.cql or "", origin=r.origin)
