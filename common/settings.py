"""Every setting coderag reads from the environment, declared once (pydantic-settings).

:class:`AppSettings` nests one group per concern (:class:`Settings` for storage and
indexing, then process, Slack, Teams, chat, Claude, freshness, Confluence, query log).
Each field names its variable, type, default and description; nothing else in coderag
reads ``os.environ`` for its own settings (documented exceptions: the SDKs' own
variables, ``ANTHROPIC_BASE_URL`` and ``HF_*`` set for offline model loading, ``GOPATH``
when looking for ``weaviate-server``, the environment handed to the embedded
``weaviate-server`` child process, :func:`debug_requested` (``CODERAG_DEBUG`` read raw
when the model itself failed to load), the secret values :mod:`common.redact` masks, and
the test-only fault points ``CODERAG_FAULT_AT``/``CODERAG_FAULT_FILE`` of
:mod:`indexer.store.faults`, which production never sets).

One rule for values: an empty variable counts as unset (the default); a malformed one
raises :class:`~common.errors.BadInput` whose one-line message names the variable
(``coderag`` exits with ``ExitCode.USAGE``). ``coderag`` validates the whole model once
at start-up (:func:`load`) and hands the :class:`AppSettings` down: the CLI through its
context (:mod:`bot.cli.context`), ``serve`` through :func:`bot.wiring.build`; every other
module takes its group as a parameter and never reads the environment itself
(``tests/unit/test_settings_read_once.py`` counts the reads). A group's ``from_env()`` reads
the environment *now*; only the composition roots and tests call it.

``python -m common.settings`` prints the settings table of ``docs/configuration.md`` (generated
from this model; ``tests/unit/test_settings.py`` checks that page and ``deploy/.env.example`` against it).
"""
from __future__ import annotations

import os
import sys
from contextvars import ContextVar
from pathlib import Path
from typing import Any, ClassVar, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from common.sources import RepoConfig, SpaceConfig, parse_repos, parse_spaces


def _default_home() -> Path:
    return Path.home() / ".local/share/coderag"


def var(name: str, default: Any = None, description: str = "", *, secret: bool = False,
        default_text: str | None = None, also: tuple[str, ...] = (), expected: str | None = None,
        kind: str | None = None, **kw) -> Any:
    """A field read from the variable ``name`` (then ``also``, e.g. an SDK's own name).
    ``default_text``: how the settings table shows the default when it is not a literal;
    ``expected``: the form a malformed value's error names, when the type alone does not
    say it (JSON values; numbers and on/off get theirs from the type and bounds);
    ``kind``: the type the settings table shows when the variable is text the field's
    validator turns into another value (a comma-separated list, a JSON object)."""
    extra = {"env": name, "secret": secret, "also": list(also)}
    if default_text is not None:
        extra["default_text"] = default_text
    if expected is not None:
        extra["expected"] = expected
    if kind is not None:
        extra["kind"] = kind
    if callable(default) and not isinstance(default, (str, int, float, bool)):
        return Field(default_factory=default, description=description, json_schema_extra=extra, **kw)
    return Field(default, description=description, json_schema_extra=extra, **kw)


def _read(cls: type[BaseSettings], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{field: raw text}`` of ``cls``'s declared variables set (non-empty) in ``env``
    (default: the process environment); the first of a field's names that is set wins."""
    env = os.environ if env is None else env
    out: dict[str, Any] = {}
    for name, f in cls.model_fields.items():
        extra = f.json_schema_extra or {}
        for key in (extra.get("env"), *extra.get("also", ())):
            raw = env.get(key) if key else None
            if raw is not None and raw.strip() != "":
                out[name] = raw
                break
    return out


#: The mapping :meth:`_Group.from_env` reads instead of ``os.environ`` (``None``: the process environment).
_ENV: ContextVar[Mapping[str, str] | None] = ContextVar("coderag_settings_env", default=None)


class _DeclaredEnv(PydanticBaseSettingsSource):
    """pydantic-settings source: the process environment, restricted to the declared
    variables (empty = unset)."""

    def get_field_value(self, field, field_name):  # pragma: no cover - required by the base class
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return _read(self.settings_cls, _ENV.get())


class _Group(BaseSettings):
    """One group of variables; build it with :meth:`from_env`."""

    model_config = SettingsConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings,
                                   dotenv_settings, file_secret_settings):
        """Constructor arguments, then the declared variables (no .env file, no secrets dir)."""
        return (init_settings, _DeclaredEnv(settings_cls))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any):
        """Read the environment now (or the mapping ``env``); ``overrides`` (field names) win.

        Raises :class:`~common.errors.BadInput` naming the variable of a malformed value.
        """
        token = _ENV.set(env)
        try:
            return cls(**overrides)
        except ValidationError as exc:
            raise _bad_input(cls, exc) from None
        finally:
            _ENV.reset(token)

    @classmethod
    def variables(cls) -> dict[str, Any]:
        """``{variable: FieldInfo}`` of this group, in declaration order (a field that is
        no variable, such as the freshness group's ``confluence``, is left out)."""
        return {extra["env"]: f for f in cls.model_fields.values() if (extra := f.json_schema_extra or {}).get("env")}


def _bad_input(cls: type[_Group], exc: ValidationError):
    """The one-line :class:`~common.errors.BadInput` for the first error of ``exc``:
    ``NAME must be <expected form>, got '<value as set>'`` plus, when the form alone does
    not show it, ``: <what is wrong>`` (where in a JSON value, why it is not valid JSON).
    A secret's value is never shown, only its length."""
    from common.errors import BadInput

    first = exc.errors()[0]
    loc = tuple(first.get("loc", ()))
    field = cls.model_fields.get(str(loc[0])) if loc else None
    extra = (field.json_schema_extra or {}) if field is not None else {}
    name = extra.get("env") or ".".join(map(str, loc)) or "setting"
    raw = _read(cls, _ENV.get()).get(str(loc[0])) if field is not None else None
    if raw is None:  # a constructor override, not a variable
        raw = first.get("input")
    from common.redact import redact_text

    problem = redact_text(_problem(first, loc[1:]))
    if problem and first.get("type") == "value_error" and _json_list(raw):
        return BadInput(f"{name}: {problem}")  # the form is right, one entry is not: say just that
    if extra.get("secret"):
        shown = f"a secret value of {len(str(raw))} characters"
    else:
        text = redact_text(str(raw))  # redacted whole, before a cut could hide a URL's "@"
        shown = repr(text if len(text) <= 80 else text[:77] + "...")
    message = f"{name} must be {_expected(field, first)}, got {shown}"
    return BadInput(f"{message}: {problem}" if problem else message)


def _json_list(raw) -> bool:
    """``raw`` is text holding a JSON list (its form right, an entry of it wrong)."""
    import json

    try:
        return isinstance(raw, str) and isinstance(json.loads(raw), list)
    except ValueError:
        return False


def _num(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _expected(field, error: dict) -> str:
    """The form a field's value must have: ``a whole number from 0 to 65535``, ``a number
    > 0``, ``on/off (...)``, ``one of 'a', 'b' or 'c'``, or the field's own ``expected``
    text (JSON values)."""
    if field is None:
        return "a valid value"
    extra = field.json_schema_extra or {}
    if extra.get("expected"):
        return str(extra["expected"])
    annotation = field.annotation
    args = [a for a in getattr(annotation, "__args__", ()) if a is not type(None)]
    if getattr(annotation, "__origin__", None) is Literal:
        *head, last = [repr(a) for a in annotation.__args__]
        return f"one of {', '.join(head)} or {last}" if head else f"{last}"
    base = args[0] if args else annotation
    if base is bool:
        return "on/off (1, true, yes, on / 0, false, no, off)"
    if base not in (int, float):
        ctx = error.get("ctx") or {}
        return str(ctx.get("error") or "a valid value") if error.get("type") == "value_error" else "a valid value"
    kind = "a whole number" if base is int else "a number"
    bounds = {k: getattr(m, k) for m in field.metadata for k in ("ge", "gt", "le", "lt") if hasattr(m, k)}
    if "ge" in bounds and "le" in bounds:
        return f"{kind} from {_num(bounds['ge'])} to {_num(bounds['le'])}"
    parts = [kind]
    for op, key in ((">=", "ge"), (">", "gt"), ("<=", "le"), ("<", "lt")):
        if key in bounds:
            parts.append(("and " if len(parts) > 1 else "") + f"{op} {_num(bounds[key])}")
    return " ".join(parts)


_TYPE_PROBLEMS = {"list_type": "is not a list", "dict_type": "is not an object", "string_type": "is not a string",
                  "int_type": "is not a whole number", "int_parsing": "is not a whole number",
                  "float_type": "is not a number", "float_parsing": "is not a number", "bool_type": "is not true/false"}


def _problem(error: dict, inner: tuple) -> str:
    """What is wrong beyond the expected form: the position of a bad item inside a JSON
    value (``["payments"] is not a list``), or a validator's reason (``not valid JSON
    (...)``); ``""`` when the expected form says it all (a bad number, a value out of range)."""
    t = str(error.get("type", ""))
    if t == "value_error":
        return str((error.get("ctx") or {}).get("error") or "")
    if t in ("list_type", "dict_type") and not inner:
        return "the JSON " + ("is not a list" if t == "list_type" else "is not an object")
    if not inner:
        return ""
    import json

    where = "".join(f"[{json.dumps(k) if isinstance(k, str) else k}]" for k in inner)
    return f"{where} {_TYPE_PROBLEMS.get(t, str(error.get('msg') or 'is not valid').lower())}"


# --------------------------------------------------------------------------- the groups

class Settings(_Group):
    """Storage and indexing: where the index lives and how files become vectors.

    Every default works on a fresh machine: an embedded Weaviate under ``CODERAG_HOME``
    and the local MiniLM embedder. ``replication_factor`` applies only when coderag
    *creates* the chunk collection; an existing collection keeps its factor.
    """

    home: Path = var("CODERAG_HOME", _default_home, "data folder (embedded Weaviate, SQLite, mirrors)",
                     default_text="`~/.local/share/coderag`")
    weaviate_url: str | None = var("WEAVIATE_URL", None, "external Weaviate (REST URL)",
                                   default_text="embedded server")
    weaviate_grpc_port: int = var("WEAVIATE_GRPC_PORT", 50051, "gRPC port of the external Weaviate", ge=1)
    weaviate_grpc_host: str | None = var("WEAVIATE_GRPC_HOST", None,
                                         "gRPC host when it is not `WEAVIATE_URL`'s (Helm: the `weaviate-grpc` Service)",
                                         default_text="`WEAVIATE_URL`'s host")
    weaviate_binary: str | None = var("WEAVIATE_BINARY", None, "path of `weaviate-server` for the embedded mode",
                                      default_text="PATH, then `~/go/bin`")
    weaviate_log_level: str = var("WEAVIATE_LOG_LEVEL", "warning", "log level of the embedded `weaviate-server`")
    replication_factor: int = var("CODERAG_REPLICATION_FACTOR", 1,
                                  "copies of each shard when coderag creates its collections (3 on a 3-node Weaviate)",
                                  ge=1)
    index_lock_ttl: float = var("CODERAG_INDEX_LOCK_TTL_SECONDS", 60.0, "an index run whose lock heartbeat is "
                                "silent this long (a frozen or swapping process) loses its repository to the next "
                                "run, and then never commits (seconds)", ge=1)
    database_url: str | None = var("CODERAG_DATABASE_URL", None, "SQL database (call graph, query log, sync state)",
                                   secret=True, default_text="SQLite in `CODERAG_HOME`")
    max_file_bytes: int = var("CODERAG_MAX_FILE_BYTES", 1024 * 1024, "larger files are skipped (bytes)", ge=1)
    voyage_api_key: str | None = var("VOYAGE_API_KEY", None, "Voyage embeddings (voyage-code-3) when set",
                                     secret=True, default_text="local MiniLM")
    voyage_base_url: str | None = var("VOYAGE_BASE_URL", None, "Voyage API base URL", default_text="the SDK's")
    voyage_model: str = var("CODERAG_VOYAGE_MODEL", "voyage-code-3", "Voyage model")
    embedding_runtime: Literal["auto", "onnx", "sentence-transformers"] = var(
        "CODERAG_EMBEDDING_RUNTIME", "auto", "how the local MiniLM runs: `auto` (ONNX Runtime, exported once into "
        "`CODERAG_HOME/models`; else sentence-transformers with a warning), `onnx` (or fail), "
        "`sentence-transformers` (the reference); ONNX fp32 gives the same vectors (cosine >= 0.999), int8 close ones "
        "(see `CODERAG_EMBEDDING_PRECISION`)")
    embedding_policy: Literal["default", "all-windows", "tests-keyword-only", "lean"] = var(
        "CODERAG_EMBEDDING_POLICY", "default", "which chunks get a vector (`indexer/embedding_policy.py`): "
        "`default` (= `lean`: test and changelog chunks keyword- and name-searchable only, docs sections by their head, code "
        "with its head plus every 25-line sub-window; chosen by measurement, docs/benchmarks.md), "
        "`tests-keyword-only` (docs and changelogs with every sub-window too), `all-windows` (every chunk, every sub-window: "
        "about 2.6x the embedding work)")
    embedding_precision: Literal["fp32", "int8"] = var(
        "CODERAG_EMBEDDING_PRECISION", "int8", "weights of the ONNX Runtime MiniLM: `int8` (dynamic quantization "
        "of the export, made once; 1.5-1.9x the fp32 throughput, vectors within cosine ~0.99 of the reference, the "
        "same recall@5 on the two dev sets combined: docs/benchmarks.md) or `fp32` (the export itself, cosine >= 0.999); ignored by "
        "sentence-transformers and Voyage")
    voyage_rerank_model: str = var("CODERAG_VOYAGE_RERANK_MODEL", "rerank-2.5", "Voyage rerank model: with "
                                   "`VOYAGE_API_KEY`, the ranked candidates are reranked before the context cap")
    # --- /metrics listener and request caps (hardening).
    metrics_host: str = var("CODERAG_METRICS_HOST", "127.0.0.1",
                            "interface of the separate `/metrics` listener of `coderag serve` (loopback by default; "
                            "0.0.0.0 in a pod so Prometheus can scrape it, never through the public Service)")
    metrics_port: int = var("CODERAG_METRICS_PORT", 9464, "port of the `/metrics` listener (9464: the Prometheus "
                            "exporter default); 0 = no listener", ge=0, le=65535)
    metrics_token: str | None = var("CODERAG_METRICS_TOKEN", None, "when set, `/metrics` requires "
                                    "`Authorization: Bearer <token>`", secret=True, repr=False)
    slack_max_body_bytes: int = var("CODERAG_SLACK_MAX_BYTES", 1024 * 1024, "larger `/slack/events` bodies get 413 "
                                    "before they are read (bytes)", ge=1)
    # --- Runbook <-> code drift and "who knows this" (indexer/drift, indexer/experts).
    drift_space_repos: dict[str, list[str]] = var(
        "CODERAG_DRIFT_SPACE_REPOS", dict, "JSON {source: [repo, ...]}: the repos whose code a source's docs are "
        "checked against for drift", default_text="a repo: its own code; a space: none",
        expected='a JSON object {"source": ["repo", ...]}')
    drift_history_commits: int = var("CODERAG_DRIFT_HISTORY_COMMITS", 3000, "commits back from the indexed one "
                                     "that drift reads to find the commit that removed a stale reference", ge=1)
    drift_exclude: list[str] = var(
        "CODERAG_DRIFT_EXCLUDE", lambda: ["*changelog*", "*CHANGES*", "*HISTORY*", "*NEWS*", "*release_notes*",
                                          "*migration_*", "*upgrading*", "*whatsnew*", "*whats_new*"],
        "JSON list of fnmatch globs of repo doc paths not checked for drift",
        default_text="changelogs, release notes, upgrade guides",
        expected='a JSON list of fnmatch globs ["*changelog*", ...]')
    drift_digest_channel: str | None = var("CODERAG_DRIFT_DIGEST_CHANNEL", None, "Slack channel id of the weekly "
                                           "drift digest (with `SLACK_BOT_TOKEN`)", default_text="no digest")
    drift_digest_webhook: str | None = var("CODERAG_DRIFT_DIGEST_WEBHOOK", None, "incoming-webhook URL (Teams or "
                                           "Slack) the drift digest is POSTed to", secret=True, repr=False)
    drift_digest_days: float = var("CODERAG_DRIFT_DIGEST_DAYS", 7.0, "period of the drift digest (days)", gt=0)
    experts_half_life_days: float = var("CODERAG_EXPERTS_HALF_LIFE_DAYS", 180.0, "`who`: a commit's weight halves "
                                        "every this many days", gt=0)
    experts_history_days: int = var("CODERAG_EXPERTS_HISTORY_DAYS", 730, "`who`: commits older than this many "
                                    "days are not stored", ge=1)
    experts_mass_change_files: int = var("CODERAG_EXPERTS_MASS_CHANGE_FILES", 100, "`who`: a commit touching at "
                                         "least this many files is a mass change (reformat, vendoring) and does not "
                                         "count", ge=2)
    experts_bot_pattern: str = var(
        "CODERAG_EXPERTS_BOT_PATTERN",
        r"\[bot\]|dependabot|renovate|github-actions|^(?:ci|bot|build|automation)(?:[-_.]\w+)?@|[-_.]bot@",
        "`who`: case-insensitive regular expression on 'Name <email>' of bot authors",
        default_text="dependabot, renovate, `[bot]`, ci@…")
    experts_chat_users: dict[str, str] = var("CODERAG_EXPERTS_CHAT_USERS", dict, "JSON {git e-mail: chat user}: a "
                                             "Slack user id is @-mentioned, anything else shown as @value",
                                             default_text="none", expected='a JSON object {"git e-mail": "chat user"}')

    @field_validator("home", mode="after")
    @classmethod
    def _expand_home(cls, v: Path) -> Path:
        return v.expanduser()

    @field_validator("drift_space_repos", "drift_exclude", "experts_chat_users", mode="before")
    @classmethod
    def _json(cls, v):
        return _json_value(v)


def _json_value(v):
    """A JSON variable's text -> its value (other values unchanged); ``ValueError`` saying
    where the text stops being JSON."""
    if isinstance(v, str):
        import json

        try:
            return json.loads(v)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON ({exc.msg} at character {exc.pos + 1})") from None
    return v


class ProcessSettings(_Group):
    """How this ``coderag`` process runs."""

    role: Literal["all", "bot", "indexer"] = var(
        "CODERAG_ROLE", "all", "what `coderag serve` runs: `bot`, `indexer` or `all` (see Deploying and scaling out)")
    scheduler: bool = var("CODERAG_SCHEDULER", True, "run the re-index scheduler in this `serve` process "
                          "(only one may run per database)", default_text="on")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = var(
        "CODERAG_LOG_LEVEL", "WARNING", "log level")
    debug: bool = var("CODERAG_DEBUG", False, "also print the traceback of an expected error "
                        "(before its one line; the exit code stays the error's own)", default_text="off")

    @field_validator("role", "log_level", mode="before")
    @classmethod
    def _normalise(cls, v, info):
        return v.strip().lower() if info.field_name == "role" else v.strip().upper()

    @field_validator("scheduler", mode="before")
    @classmethod
    def _on_off(cls, v):
        return _on_off(v)


def _on_off(v):
    if isinstance(v, str) and v.strip().lower() in ("on", "off"):
        return v.strip().lower() == "on"
    return v


class ChatSettings(_Group):
    """What Slack and Teams share: citation links, the staleness note, the channel
    allow-list and the MCP tokens."""

    repo_urls: dict[str, str] = var("CODERAG_REPO_URLS", dict, "repo name -> browse URL for citation links: JSON "
                                    "object or a file (see `deploy/repo-urls.example.json`)", kind="text",
                                    default_text="plain-text citations",
                                    expected='a JSON object {"repo": "url template with {path}"}')
    stale_hours: float = var("CODERAG_STALE_HOURS", 24.0, "a cited repo indexed longer ago than this gets a "
                             "staleness note (hours)", ge=0)
    channel_sources: str = var("CODERAG_CHANNEL_SOURCES", "", "channel -> sources allow-list, JSON "
                               '`{"C123": ["repo-a", "space-x"], "*": [...]}` (see Multi-tenancy)',
                               default_text="every channel reads everything")
    mcp_tokens: str = var("CODERAG_MCP_TOKENS", "", "bearer tokens of the MCP HTTP transport (`/mcp` in `serve`) "
                          'and the sources each may read, JSON `{"NAME": {"token": "…", "sources": ["repo-a"]}}` '
                          '(`["*"]` = every source; see MCP)', secret=True,
                          default_text="no MCP over HTTP (stdio `coderag mcp` is unaffected)")

    @field_validator("repo_urls", mode="before")
    @classmethod
    def _repo_urls_json(cls, v):
        return _json_value(v)

    @field_validator("repo_urls", mode="after")
    @classmethod
    def _repo_urls_have_path(cls, v: dict[str, str]) -> dict[str, str]:
        import json

        for repo, template in v.items():
            if "{path}" not in template:
                raise ValueError(f"[{json.dumps(repo)}] has no {{path}} placeholder")
        return v


def _comma_list(v):
    """A comma-separated variable -> its non-blank items, stripped (other values unchanged)."""
    return tuple(x.strip() for x in v.split(",") if x.strip()) if isinstance(v, str) else v


class SlackSettings(_Group):
    """The Slack front end (``bot/slack``): tokens, Web API URL (always ending in ``/``),
    the onboarding channels (a set of ids) and the answering threads (at least 2)."""

    bot_token: str = var("SLACK_BOT_TOKEN", "", "bot token (`xoxb-…`)", secret=True, default_text="Slack off")
    signing_secret: str = var("SLACK_SIGNING_SECRET", "", "request signing secret (HTTP mode)", secret=True)
    app_token: str = var("SLACK_APP_TOKEN", "", "app-level token (`xapp-…`): Socket Mode instead of HTTP",
                         secret=True, default_text="HTTP mode")
    api_url: str = var("SLACK_API_URL", "https://slack.com/api/", "Slack Web API base URL")
    onboarding_channels: frozenset[str] = var("CODERAG_ONBOARDING_CHANNELS", frozenset, "comma-separated channel "
                                              "ids where the bot answers every top-level message that reads as a "
                                              "question, without a mention", kind="text", default_text="none")
    workers: int = var("CODERAG_SLACK_WORKERS", 16, "threads answering Slack questions (at least 2)", ge=1)

    @field_validator("api_url", mode="after")
    @classmethod
    def _slash(cls, v: str) -> str:
        return v if v.endswith("/") else v + "/"

    @field_validator("onboarding_channels", mode="before")
    @classmethod
    def _channels(cls, v):
        return frozenset(_comma_list(v))

    @field_validator("workers", mode="after")
    @classmethod
    def _at_least_two(cls, v: int) -> int:
        return max(2, v)

    @property
    def socket_mode(self) -> bool:
        """True when an app-level token is set: connect out over Socket Mode."""
        return bool(self.app_token)

    def check(self) -> None:
        """Raise ``BadInput`` when a token the chosen mode needs is missing."""
        from common.errors import BadInput

        if not self.bot_token:
            raise BadInput("SLACK_BOT_TOKEN is not set (the bot token, xoxb-...)")
        if not self.socket_mode and not self.signing_secret:
            raise BadInput("SLACK_SIGNING_SECRET is not set (needed in HTTP mode; "
                           "set SLACK_APP_TOKEN for Socket Mode instead)")


class TeamsSettings(_Group):
    """The Microsoft Teams front end (``bot/teams``): the Entra identity, the extra hosts
    replies may go to (a tuple) and the answering threads (at least 2)."""

    enabled: bool = var("CODERAG_TEAMS", False, "serve `/api/messages` without an app id (anonymous, local testing "
                        "only)", default_text="off")
    client_id: str = var("CODERAG_TEAMS_CLIENT_ID", "", "Entra app (bot) id; turns Teams on",
                         also=("CONNECTIONS__SERVICE_CONNECTION__SETTINGS__CLIENTID",), default_text="Teams off")
    client_secret: str = var("CODERAG_TEAMS_CLIENT_SECRET", "", "Entra app secret", secret=True,
                             also=("CONNECTIONS__SERVICE_CONNECTION__SETTINGS__CLIENTSECRET",))
    tenant_id: str = var("CODERAG_TEAMS_TENANT_ID", "", "Entra tenant id",
                         also=("CONNECTIONS__SERVICE_CONNECTION__SETTINGS__TENANTID",))
    service_hosts: tuple[str, ...] = var("CODERAG_TEAMS_SERVICE_HOSTS", (), "extra comma-separated hosts replies "
                                         "may be sent to (besides Microsoft's)", kind="text",
                                         default_text="Microsoft's only")
    workers: int = var("CODERAG_TEAMS_WORKERS", 16, "threads answering Teams questions (at least 2)", ge=1)

    @field_validator("service_hosts", mode="before")
    @classmethod
    def _hosts(cls, v):
        return _comma_list(v)

    @field_validator("workers", mode="after")
    @classmethod
    def _at_least_two(cls, v: int) -> int:
        return max(2, v)


class ClaudeSettings(_Group):
    """Answers written by Claude (``bot/answer/claude.py``); the SDK reads
    ``ANTHROPIC_BASE_URL`` itself."""

    api_key: str = var("ANTHROPIC_API_KEY", "", "Claude writes answers when set", secret=True,
                       default_text="extractive answers")
    model: str = var("CODERAG_CLAUDE_MODEL", "claude-sonnet-5-5", "Claude model id")
    max_tokens: int = var("CODERAG_CLAUDE_MAX_TOKENS", 1024, "answer cap (tokens)", ge=1)
    context_tokens: int = var("CODERAG_CLAUDE_CONTEXT_TOKENS", 200_000, "context window the prompt must fit "
                              "(tokens)", ge=1)
    max_retries: int = var("CODERAG_CLAUDE_MAX_RETRIES", 3, "SDK retries (429/529/5xx/connection, exponential "
                           "backoff, honours retry-after)", ge=0)
    timeout: float = var("CODERAG_CLAUDE_TIMEOUT", 60.0, "seconds per attempt", gt=0)

    @field_validator("model", mode="before")
    @classmethod
    def _model_id(cls, v):
        return v.strip() or cls.model_fields["model"].default if isinstance(v, str) else v

    @property
    def enabled(self) -> bool:
        """Claude answers only when an API key is configured."""
        return bool(self.api_key.strip())

    @property
    def input_budget(self) -> int:
        """Tokens the prompt may use: the context window minus the answer's room."""
        return max(0, self.context_tokens - self.max_tokens)


class ConfluenceSettings(_Group):
    """Confluence spaces (``indexer/confluence``): the site (its URL without a trailing
    ``/``), Cloud or Data Center credentials (:meth:`check`), and the spaces kept fresh,
    parsed (each with its own TTL or the group's)."""

    #: Retries of a rate-limited or unavailable request (429/503), with backoff.
    max_retries: ClassVar[int] = 5

    url: str = var("CODERAG_CONFLUENCE_URL", "", "base URL (Cloud: `https://SITE.atlassian.net/wiki`)",
                   default_text="Confluence off")
    email: str = var("CODERAG_CONFLUENCE_EMAIL", "", "Cloud: account email (with the API token)")
    api_token: str = var("CODERAG_CONFLUENCE_API_TOKEN", "", "Cloud: API token", secret=True)
    pat: str = var("CODERAG_CONFLUENCE_PAT", "", "Data Center: personal access token", secret=True)
    ttl_hours: float = var("CODERAG_CONFLUENCE_TTL_HOURS", 24.0, "re-sync period of a space; older Confluence "
                           "sources get a staleness warning (hours)", gt=0)
    spaces: tuple[SpaceConfig, ...] = var(
        "CODERAG_CONFLUENCE_SPACES", (), 'spaces: `KEY1,KEY2` or JSON `[{"key","ttl_hours"?,"cql"?}]`', kind="text",
        default_text="none", expected='KEY1,KEY2 or a JSON list [{"key", "ttl_hours"?, "cql"?}]')
    overlap_minutes: float = var("CODERAG_CONFLUENCE_OVERLAP_MINUTES", 1440.0, "overlap of incremental "
                                 "`lastmodified` queries (minutes)", ge=0)
    reconcile_hours: float = var("CODERAG_CONFLUENCE_RECONCILE_HOURS", 168.0, "full listing that removes "
                                 "deleted/archived pages (hours)", gt=0)

    @field_validator("url", mode="after")
    @classmethod
    def _site(cls, v: str) -> str:
        return v.strip().rstrip("/")

    @field_validator("spaces", mode="before")
    @classmethod
    def _spaces(cls, v, info):
        if not isinstance(v, str):
            return v
        return parse_spaces(v, info.data.get("ttl_hours", cls.model_fields["ttl_hours"].default))

    @property
    def enabled(self) -> bool:
        """Confluence is configured: ``CODERAG_CONFLUENCE_URL`` is set."""
        return bool(self.url)

    @property
    def cloud(self) -> bool:
        """Cloud (email + API token) rather than Data Center (a bearer PAT)."""
        return bool(self.email and self.api_token)

    def space(self, key: str) -> SpaceConfig:
        """The configured space ``key``; raises ``BadInput`` when it is not configured."""
        from common.errors import BadInput

        for s in self.spaces:
            if s.key == key:
                return s
        raise BadInput(f"Confluence space {key!r} is not configured (CODERAG_CONFLUENCE_SPACES)")

    def check(self) -> None:
        """Raise ``BadInput`` when the URL is set without credentials for either kind of site."""
        from common.errors import BadInput

        if self.enabled and not self.cloud and not self.pat:
            raise BadInput("CODERAG_CONFLUENCE_URL is set but no credentials: set CODERAG_CONFLUENCE_EMAIL + "
                           "CODERAG_CONFLUENCE_API_TOKEN (Cloud) or CODERAG_CONFLUENCE_PAT (Data Center)")


#: Default cap on a webhook request body, in bytes (25 MiB). GitHub caps webhook
#: payloads at 25 MB (it does not deliver larger ones), so a genuine push never exceeds it.
DEFAULT_WEBHOOK_MAX_BYTES = 25 * 1024 * 1024


class FreshnessSettings(_Group):
    """Repositories and Confluence spaces kept fresh by push webhooks, the scheduler,
    ``coderag sync`` and ``coderag worker`` (``indexer/freshness``): the repos (parsed),
    the webhook secrets and body cap, the safety re-fetch, who runs index jobs, and
    ``confluence``, the Confluence group when ``CODERAG_CONFLUENCE_URL`` is set
    (:func:`load` hands it over; :meth:`check` checks its credentials)."""

    repos: tuple[RepoConfig, ...] = var(
        "CODERAG_REPOS", (), 'JSON list of repos `[{"name","url","branch","url_template","aliases","refs",'
        '"max_refs"}]` or a .json/.yaml file holding it (`refs`: release tag globs and branch names indexed '
        "besides `branch`, the newest `max_refs` tags (5) per pattern; see Configuration)", kind="text",
        default_text="none",
        expected='a JSON list of repos [{"name", "url", ...}] or a .json/.yaml file holding it')
    github_secret: str = var("CODERAG_GITHUB_WEBHOOK_SECRET", "", "HMAC secret of `POST /webhooks/github`",
                             secret=True, default_text="route off")
    gitlab_token: str = var("CODERAG_GITLAB_WEBHOOK_TOKEN", "", "shared token of `POST /webhooks/gitlab`",
                            secret=True, default_text="route off")
    webhook_max_bytes: int = var("CODERAG_WEBHOOK_MAX_BYTES", DEFAULT_WEBHOOK_MAX_BYTES,
                                 "largest webhook body accepted (bytes; larger: 413, never read whole)", gt=0)
    safety_minutes: float = var("CODERAG_REPO_SAFETY_MINUTES", 60.0, "periodic re-fetch of every repo, in case "
                                "webhooks were missed (minutes)", gt=0)
    index_queue: Literal["threads", "procrastinate"] = var(
        "CODERAG_INDEX_QUEUE", "threads", "who runs index jobs: `threads` (a thread per repo in the process that got "
        "the push) or `procrastinate` (a PostgreSQL task queue; `coderag worker` processes on any machines run them)")
    queue_retry_seconds: float = var(
        "CODERAG_QUEUE_RETRY_SECONDS", 2.0, "index queue: wait before the first retry of a job that failed transiently "
        "(Weaviate, the embedding API or the Git host briefly down); each of the 5 retries waits twice the one "
        "before (seconds)", gt=0)
    #: Not a variable of its own: the Confluence group, when Confluence is configured.
    confluence: ConfluenceSettings | None = Field(None, description="the Confluence spaces kept fresh")

    @field_validator("repos", mode="before")
    @classmethod
    def _repos(cls, v):
        return parse_repos(v) if isinstance(v, str) else v

    @property
    def webhooks_enabled(self) -> bool:
        """Push webhooks are served: repos are configured and a GitHub or GitLab secret is set."""
        return bool(self.repos and (self.github_secret or self.gitlab_token))

    def repo(self, name: str) -> RepoConfig:
        """The configured repo ``name``; raises ``BadInput`` when unknown."""
        from common.errors import BadInput

        for r in self.repos:
            if r.name == name:
                return r
        raise BadInput(f"repo {name!r} is not configured (CODERAG_REPOS); known: "
                       f"{', '.join(r.name for r in self.repos) or 'none'}")

    def check(self) -> None:
        """Raise ``BadInput`` when Confluence is configured without credentials."""
        if self.confluence is not None:
            self.confluence.check()


class QueryLogSettings(_Group):
    """The query log (``bot/querylog``): retention, privacy, prices."""

    # Privacy defaults: ids hashed, text kept 90 days — long enough for monthly reviews of
    # coverage gaps and 👎 answers, short enough that what people asked does not pile up for good.
    retention_days: int | None = var("CODERAG_RETENTION_DAYS", 90, "blank question/answer text older than this "
                                     "many days (`off` or 0 keeps it forever)", ge=1,
                                     expected="a whole number of days >= 1, or off (0, off, never, none)")
    hash_user_ids: bool = var("CODERAG_HASH_USER_IDS", True, "store HMAC-SHA256 digests of user ids instead of "
                              "the ids (0 = raw ids)", default_text="on")
    user_hash_salt: str = var("CODERAG_USER_HASH_SALT", "", "the salt (>= 16 characters) when hashing user ids; "
                              "unset: generated once and kept in the database", secret=True)

    @field_validator("retention_days", mode="before")
    @classmethod
    def _retention_off(cls, v):
        if isinstance(v, str) and v.strip().lower() in ("0", "off", "never", "none"):
            return None
        return v

    @field_validator("hash_user_ids", mode="before")
    @classmethod
    def _hash_on_off(cls, v):
        return _on_off(v)
    price_input: float | None = var("CODERAG_PRICE_INPUT_PER_MTOK", None, "input price override (USD per million "
                                    "tokens)", ge=0, default_text="list price")
    price_output: float | None = var("CODERAG_PRICE_OUTPUT_PER_MTOK", None, "output price override", ge=0,
                                     default_text="list price")
    price_cache_read: float | None = var("CODERAG_PRICE_CACHE_READ_PER_MTOK", None, "cache-read price override",
                                         ge=0, default_text="list price")
    price_cache_write: float | None = var("CODERAG_PRICE_CACHE_WRITE_PER_MTOK", None, "cache-write price override",
                                          ge=0, default_text="list price")


#: How the change log names whoever signs in with ``CODERAG_ADMIN_TOKEN`` (the one shared token).
ADMIN_TOKEN_NAME = "admin"


class AdminSettings(_Group):
    """The admin page (``bot/admin``): who may sign in, and how."""

    token: str = var("CODERAG_ADMIN_TOKEN", "", "token that signs in to `/admin` (at least 24 characters), shared by "
                     "every admin: the change log names it `admin`", expected="a token of at least 24 characters",
                     secret=True, default_text="no token sign-in")
    tokens: dict[str, str] = var(
        "CODERAG_ADMIN_TOKENS", dict, "one token per admin, named in the change log: comma-separated `name:token` "
        "pairs (tokens of at least 24 characters), or `name:sha256:HEX` to keep only each token's SHA-256 here",
        secret=True, kind="text", default_text="none",
        expected="comma-separated name:token pairs (names of letters, digits and ._@-; tokens of at least 24 "
                 "characters, or sha256: and 64 hex digits)")
    users: frozenset[str] = var("CODERAG_ADMIN_USERS", frozenset, "comma-separated Slack user ids or emails who may "
                                "sign in to `/admin` with Slack", kind="text", default_text="none")
    slack_client_id: str = var("SLACK_CLIENT_ID", "", "the Slack app's client id: \"Sign in with Slack\" on `/admin`",
                               default_text="Slack sign-in off")
    slack_client_secret: str = var("SLACK_CLIENT_SECRET", "", "the Slack app's client secret", secret=True)
    public_url: str = var("CODERAG_PUBLIC_URL", "", "the address people reach `coderag serve` at "
                          "(`https://coderag.example.com`): the Slack sign-in's redirect, the link in review "
                          "notices, secure cookies when https",
                          default_text="the request's own address; notices name `/admin/reviews`, unlinked")
    session_secret: str = var("CODERAG_ADMIN_SESSION_SECRET", "", "key that signs `/admin` session cookies",
                              secret=True, default_text="generated once, kept in the database")
    session_hours: float = var("CODERAG_ADMIN_SESSION_HOURS", 12.0, "an `/admin` sign-in lasts this long (hours)",
                               gt=0)
    review_channel: str = var("CODERAG_REVIEW_CHANNEL", "", "channel id where drafts of `review` channels are "
                              "announced (seeds the value the admin page changes)", default_text="the page only")

    @field_validator("users", mode="before")
    @classmethod
    def _users(cls, v):
        if isinstance(v, str):
            return frozenset(x.strip().lower() for x in v.split(",") if x.strip())
        return frozenset(str(x).lower() for x in v)

    @field_validator("token", mode="after")
    @classmethod
    def _long_token(cls, v: str) -> str:
        if v and len(v.strip()) < 24:
            raise ValueError("at least 24 characters (e.g. `openssl rand -hex 24`)")
        return v.strip()

    @field_validator("tokens", mode="before")
    @classmethod
    def _named_tokens(cls, v):
        import re

        if not isinstance(v, str):
            return v
        out: dict[str, str] = {}
        for pair in (p.strip() for p in v.split(",") if p.strip()):
            name, sep, token = pair.partition(":")
            name, token = name.strip(), token.strip()
            if not sep or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}", name):
                raise ValueError("each entry is name:token, the name of letters, digits and ._@-")
            hashed = re.fullmatch(r"sha256:[0-9a-fA-F]{64}", token)
            if not hashed and len(token) < 24:
                raise ValueError(f"the token of {name} needs at least 24 characters (e.g. `openssl rand -hex 24`)")
            if name == ADMIN_TOKEN_NAME:
                raise ValueError(f"the name {name} is CODERAG_ADMIN_TOKEN's: pick another")
            if name in out:
                raise ValueError(f"the name {name} is given twice")
            out[name] = token.lower() if hashed else token
        if len(set(out.values())) < len(out):
            raise ValueError("two admins have the same token")
        return out

    @property
    def named_tokens(self) -> dict[str, str]:
        """``{admin name: token}`` of every token sign-in: ``CODERAG_ADMIN_TOKENS``, and
        ``CODERAG_ADMIN_TOKEN`` named :data:`ADMIN_TOKEN_NAME` (a token may be
        ``sha256:HEX``, its digest)."""
        named = dict(self.tokens)
        if self.token:
            named[ADMIN_TOKEN_NAME] = self.token
        return named

    @property
    def slack_login(self) -> bool:
        """True when "Sign in with Slack" is configured."""
        return bool(self.slack_client_id and self.slack_client_secret)

    @property
    def enabled(self) -> bool:
        """True when some sign-in is configured (else ``/admin`` is not served)."""
        return bool(self.token or self.tokens) or self.slack_login


GROUPS: tuple[type[_Group], ...] = (Settings, ProcessSettings, ChatSettings, SlackSettings, TeamsSettings,
                                    ClaudeSettings, FreshnessSettings, ConfluenceSettings, QueryLogSettings, AdminSettings)


class AppSettings(BaseModel):
    """Every group (each a pydantic-settings model), validated together (:func:`load`)."""

    model_config = ConfigDict(frozen=True)

    core: Settings
    process: ProcessSettings
    chat: ChatSettings
    slack: SlackSettings
    teams: TeamsSettings
    claude: ClaudeSettings
    freshness: FreshnessSettings
    confluence: ConfluenceSettings
    querylog: QueryLogSettings
    admin: AdminSettings


def load(env: Mapping[str, str] | None = None) -> AppSettings:
    """Read and validate every declared variable (``coderag`` does it once at start-up,
    so a malformed value fails before any work). Raises ``BadInput`` naming the first
    malformed variable."""
    confluence = ConfluenceSettings.from_env(env)
    return AppSettings(core=Settings.from_env(env), process=ProcessSettings.from_env(env),
                       chat=ChatSettings.from_env(env), slack=SlackSettings.from_env(env),
                       teams=TeamsSettings.from_env(env), claude=ClaudeSettings.from_env(env),
                       freshness=FreshnessSettings.from_env(env, confluence=confluence if confluence.enabled else None),
                       confluence=confluence, querylog=QueryLogSettings.from_env(env),
                       admin=AdminSettings.from_env(env))


def defaults() -> AppSettings:
    """Every group at its declared default, the environment unread (what a library
    caller gets when it passes no settings; the roots pass :func:`load`'s)."""
    return load({})


_installed: AppSettings | None = None


def install(settings: AppSettings | None) -> AppSettings | None:
    """Make ``settings`` (the composition root's :func:`load`) what :func:`installed`
    returns in this process (``None``: none, when a served process closes); returns it."""
    global _installed
    _installed = settings
    return settings


def installed() -> AppSettings:
    """The settings the composition root installed (:func:`install`), for the scheduler
    job bodies a persistent job store calls by name (they cannot be handed objects);
    read now (:func:`load`) when none is installed (a job run outside ``coderag``).
    Nothing else uses it: everything else is handed its group."""
    return _installed if _installed is not None else load()


def declared_variables() -> dict[str, tuple[type[_Group], Any]]:
    """``{variable: (group, FieldInfo)}`` of every declared variable (the extra names a
    field also accepts, such as the Teams SDK's, are not listed)."""
    return {name: (group, f) for group in GROUPS for name, f in group.variables().items()}


def markdown_table() -> str:
    """The settings table of ``docs/configuration.md`` (Markdown): one row per variable
    (generated, never edited by hand)."""
    rows = ["| variable | type | default | meaning |", "|---|---|---|---|"]
    for name, (_group, f) in declared_variables().items():
        extra = f.json_schema_extra or {}
        default = extra.get("default_text")
        if default is None:
            d = f.get_default(call_default_factory=False)
            default = "none" if d in (None, "") else f"`{d}`"
        kind = extra.get("kind") or _type_name(f.annotation)
        meaning = f.description + (" (secret)" if extra.get("secret") else "")
        rows.append(f"| `{name}` | {kind} | {default} | {meaning} |")
    return "\n".join(rows) + "\n"


def _type_name(annotation) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    text = str(annotation) if text in ("Optional", "Union", "Literal") else text
    for a, b in (("typing.", ""), ("pathlib.", ""), ("NoneType", "None"), (" | None", ""), ("Optional[", "")):
        text = text.replace(a, b)
    if text.startswith("Literal["):
        return " / ".join(x.strip(" '") for x in text[8:-1].split(","))
    return {"str": "text", "int": "integer", "float": "number", "bool": "on/off", "Path": "path"}.get(text, text)


if __name__ == "__main__":
    sys.stdout.write(markdown_table())


def debug_requested() -> bool:
    """Whether ``CODERAG_DEBUG`` asks for tracebacks, read straight from the environment
    (on, true, yes, 1; case-insensitive): used only when :func:`load` itself failed, so
    that a malformed *other* setting still gets its traceback."""
    import os

    return os.environ.get("CODERAG_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")
