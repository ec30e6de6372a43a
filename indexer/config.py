"""Settings read from the environment, in one place (pydantic-settings).

Every setting has a default that works on a fresh machine with nothing configured:
an embedded Weaviate under ``CODERAG_HOME`` and the local MiniLM embedder. In a
deployment (``deploy/docker-compose.yml``, ``deploy/helm/coderag``) the same variables
come from the container environment (ConfigMap and Secrets); ``deploy/.env.example``
lists every variable coderag reads.

The rest of the code builds a :class:`Settings` only through :meth:`Settings.from_env`,
which reads the environment *now* (tests change it between calls).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict


def _default_home() -> Path:
    return Path.home() / ".local/share/coderag"


class Settings(BaseSettings):
    """Resolved configuration (immutable).

    home: data folder (``CODERAG_HOME``, default ``~/.local/share/coderag``).
    weaviate_url: external Weaviate (``WEAVIATE_URL``); ``None`` means run the embedded server.
    weaviate_grpc_port: gRPC port of the external server (``WEAVIATE_GRPC_PORT``, default 50051).
    weaviate_grpc_host: gRPC host when it differs from ``WEAVIATE_URL``'s (``WEAVIATE_GRPC_HOST``;
    e.g. the Helm chart's separate ``weaviate-grpc`` Service).
    weaviate_binary: ``WEAVIATE_BINARY`` or ``weaviate-server`` found on PATH / in ``~/go/bin``.
    voyage_api_key: ``VOYAGE_API_KEY``; when set, chunks are embedded with voyage-code-3.
    voyage_model: ``CODERAG_VOYAGE_MODEL`` (default ``voyage-code-3``).
    max_file_bytes: files larger than this are skipped (``CODERAG_MAX_FILE_BYTES``, default 1 MiB).
    replication_factor: copies of every chunk shard when coderag *creates* the chunk
    collection (``CODERAG_REPLICATION_FACTOR``, default 1; 3 on a 3-node Weaviate cluster).
    An existing collection keeps the factor it was created with.
    metrics_host / metrics_port / metrics_token: the separate ``/metrics`` listener of
    ``coderag serve`` (``CODERAG_METRICS_HOST``, default ``127.0.0.1``; ``CODERAG_METRICS_PORT``,
    default 9464, 0 = off; ``CODERAG_METRICS_TOKEN``, optional bearer token).
    slack_max_body_bytes: ``/slack/events`` body cap (``CODERAG_SLACK_MAX_BYTES``, default 1 MiB).
    Secrets (``voyage_api_key``, ``metrics_token``) are left out of the repr.
    drift_* and experts_*: runbook <-> code drift and ``who`` (each field's ``description``).

    Empty variables count as unset. A malformed number raises ``BadInput`` naming the
    variable (exit code of a bad-input error in the CLI).
    """

    # Case-sensitive and alias-only: ``HOME`` must not fill ``home``, nor ``extra`` fill ``extra``.
    model_config = SettingsConfigDict(frozen=True, extra="ignore", env_ignore_empty=True,
                                      case_sensitive=True)

    home: Path = Field(default_factory=_default_home, validation_alias="CODERAG_HOME")
    weaviate_url: str | None = Field(None, validation_alias="WEAVIATE_URL")
    weaviate_grpc_port: int = Field(50051, validation_alias="WEAVIATE_GRPC_PORT")
    weaviate_grpc_host: str | None = Field(None, validation_alias="WEAVIATE_GRPC_HOST")
    weaviate_binary: str | None = Field(None, validation_alias="WEAVIATE_BINARY")
    voyage_api_key: str | None = Field(None, repr=False, validation_alias="VOYAGE_API_KEY")
    voyage_model: str = Field("voyage-code-3", validation_alias="CODERAG_VOYAGE_MODEL")
    max_file_bytes: int = Field(1024 * 1024, ge=1, validation_alias="CODERAG_MAX_FILE_BYTES")
    replication_factor: int = Field(1, ge=1, validation_alias="CODERAG_REPLICATION_FACTOR")
    metrics_host: str = Field(
        "127.0.0.1", validation_alias="CODERAG_METRICS_HOST",
        description="Interface of the separate /metrics listener of `coderag serve` (loopback by default; "
                    "0.0.0.0 in a pod so Prometheus can scrape it, never through the public Service).")
    metrics_port: int = Field(
        9464, ge=0, le=65535, validation_alias="CODERAG_METRICS_PORT",
        description="Port of the /metrics listener (9464: the Prometheus exporter default); 0 = no listener. "
                    "/metrics is never served on the public Slack/Teams port.")
    metrics_token: str | None = Field(
        None, repr=False, validation_alias="CODERAG_METRICS_TOKEN",
        description="When set, /metrics requires `Authorization: Bearer <token>` (a secret).")
    slack_max_body_bytes: int = Field(
        1024 * 1024, ge=1, validation_alias="CODERAG_SLACK_MAX_BYTES",
        description="Larger /slack/events bodies get 413 before they are read (Slack's payloads stay far "
                    "below 1 MiB; a message is at most 40,000 characters).")
    # --- Runbook <-> code drift and "who knows this" (issue 17: indexer/drift, indexer/experts).
    drift_space_repos: dict[str, list[str]] = Field(
        default_factory=dict, validation_alias="CODERAG_DRIFT_SPACE_REPOS",
        description="JSON {source: [repo, ...]}: the repos whose code the docs of a Confluence space "
                    "(or a repo's own docs) are checked against; a source not listed is checked "
                    "against every indexed repo.")
    drift_history_commits: int = Field(
        3000, ge=1, validation_alias="CODERAG_DRIFT_HISTORY_COMMITS",
        description="How many commits back from the indexed one drift reads (one `git log -p` pass) "
                    "to find the commit that removed or renamed a stale reference.")
    drift_exclude: list[str] = Field(
        default_factory=lambda: ["*changelog*", "*CHANGES*", "*HISTORY*", "*NEWS*", "*release_notes*",
                                 "*migration_*"],
        validation_alias="CODERAG_DRIFT_EXCLUDE",
        description="JSON list of fnmatch globs of repo doc paths not checked for drift (changelogs "
                    "name removed things on purpose).")
    drift_digest_channel: str | None = Field(
        None, validation_alias="CODERAG_DRIFT_DIGEST_CHANNEL",
        description="Slack channel ID the weekly drift digest is posted to (with SLACK_BOT_TOKEN).")
    drift_digest_webhook: str | None = Field(
        None, validation_alias="CODERAG_DRIFT_DIGEST_WEBHOOK",
        description="Incoming-webhook URL (Teams or Slack) the weekly drift digest is POSTed to as {\"text\"}.")
    drift_digest_days: float = Field(
        7.0, gt=0, validation_alias="CODERAG_DRIFT_DIGEST_DAYS",
        description="Period of the drift digest job, in days.")
    experts_half_life_days: float = Field(
        180.0, gt=0, validation_alias="CODERAG_EXPERTS_HALF_LIFE_DAYS",
        description="Recency weight of a commit in `who`: halves every this many days.")
    experts_history_days: int = Field(
        730, ge=1, validation_alias="CODERAG_EXPERTS_HISTORY_DAYS",
        description="Commits older than this many days are not stored for `who`.")
    experts_mass_change_files: int = Field(
        100, ge=2, validation_alias="CODERAG_EXPERTS_MASS_CHANGE_FILES",
        description="A commit touching at least this many files is a mass change (reformat, vendoring) "
                    "and does not count in `who`.")
    experts_bot_pattern: str = Field(
        r"\[bot\]|dependabot|renovate|github-actions|^(?:ci|bot|build|automation)(?:[-_.]\w+)?@|[-_.]bot@",
        validation_alias="CODERAG_EXPERTS_BOT_PATTERN",
        description="Regular expression (case-insensitive) on 'Name <email>' of authors that are bots.")
    experts_chat_users: dict[str, str] = Field(
        default_factory=dict, validation_alias="CODERAG_EXPERTS_CHAT_USERS",
        description="JSON {git e-mail: chat user}: a Slack user ID (U...) is @-mentioned as <@U...>, "
                    "anything else (a Teams UPN) is shown as @value.")
    # Not read from the environment (filtered out in settings_customise_sources).
    collection: str = "CodeChunk"
    extra: dict = Field(default_factory=dict)

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings,
                                   dotenv_settings, file_secret_settings):
        """Constructor arguments, then the process environment (no .env file, no secrets dir)."""
        return (init_settings, _AliasedEnv(settings_cls))

    @field_validator("home", mode="after")
    @classmethod
    def _expand_home(cls, v: Path) -> Path:
        return v.expanduser()

    @classmethod
    def from_env(cls, **overrides: Any) -> "Settings":
        """Read the environment now. ``overrides`` (field names) win over the environment.

        Raises :class:`indexer.errors.BadInput` on a malformed value (e.g. a non-integer
        ``WEAVIATE_GRPC_PORT``), naming the variable.
        """
        aliases = {name: f.validation_alias or name for name, f in cls.model_fields.items()}
        try:
            return cls(**{aliases.get(k, k): v for k, v in overrides.items()})
        except ValidationError as exc:
            from .errors import BadInput

            first = exc.errors()[0]
            name = ".".join(str(p) for p in first.get("loc", ())) or "setting"
            raw = first.get("input")
            raise BadInput(f"{name} must be a {_kind(first)}, got {raw!r}") from None


class _AliasedEnv(EnvSettingsSource):
    """The environment, restricted to fields that name a variable (``validation_alias``)."""

    def __call__(self) -> dict[str, Any]:
        env_fields = {f.validation_alias for f in self.settings_cls.model_fields.values() if f.validation_alias}
        return {k: v for k, v in super().__call__().items() if k in env_fields}


def _kind(error: dict) -> str:
    t = str(error.get("type", ""))
    if t.startswith("int") or "greater_than" in t or "less_than" in t:
        if "greater_than" in t or "less_than" in t:
            ctx = error.get("ctx") or {}
            bounds = ", ".join(f"{op} {ctx[k]}" for k, op in (("ge", ">="), ("le", "<=")) if k in ctx)
            return f"whole number ({bounds})" if bounds else "whole number"
        return "whole number"
    return "valid value"
