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
from typing import Any, Literal

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
    embedding_runtime: how the local MiniLM runs (``CODERAG_EMBEDDING_RUNTIME``):
    ``auto`` (default: ONNX Runtime when it is installed and the one-time export works,
    else sentence-transformers with a one-line warning), ``onnx`` (ONNX Runtime or fail),
    ``sentence-transformers`` (the reference). Both give the same vectors (cosine >= 0.999)
    and the same model name, so an index built with one is searched with the other.
    Ignored when ``VOYAGE_API_KEY`` is set.

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
    voyage_api_key: str | None = Field(None, validation_alias="VOYAGE_API_KEY")
    voyage_model: str = Field("voyage-code-3", validation_alias="CODERAG_VOYAGE_MODEL")
    max_file_bytes: int = Field(1024 * 1024, ge=1, validation_alias="CODERAG_MAX_FILE_BYTES")
    replication_factor: int = Field(1, ge=1, validation_alias="CODERAG_REPLICATION_FACTOR")
    embedding_runtime: Literal["auto", "onnx", "sentence-transformers"] = Field(
        "auto", validation_alias="CODERAG_EMBEDDING_RUNTIME",
        description="Local embedding runtime: auto (ONNX Runtime, else sentence-transformers), "
                    "onnx, or sentence-transformers (the reference).")
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
    if t.startswith("int") or "greater_than" in t:
        return "whole number" + (" (>= 1)" if "greater_than" in t else "")
    if t == "literal_error":
        return "value among " + str(error.get("ctx", {}).get("expected", "the documented values"))
    return "valid value"
