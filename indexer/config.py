"""Settings read from the environment, in one place.

Every setting has a default that works on a fresh machine with nothing configured:
an embedded Weaviate under ``CODERAG_HOME`` and the local MiniLM embedder.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        from .errors import BadInput

        raise BadInput(f"{name} must be a whole number, got {raw!r}") from None


@dataclass(frozen=True)
class Settings:
    """Resolved configuration.

    home: data folder (``CODERAG_HOME``, default ``~/.local/share/coderag``).
    weaviate_url: external Weaviate (``WEAVIATE_URL``); ``None`` means run the embedded server.
    weaviate_grpc_port: gRPC port of the external server (``WEAVIATE_GRPC_PORT``, default 50051).
    weaviate_binary: ``WEAVIATE_BINARY`` or ``weaviate-server`` found on PATH / in ``~/go/bin``.
    voyage_api_key: ``VOYAGE_API_KEY``; when set, chunks are embedded with voyage-code-3.
    max_file_bytes: files larger than this are skipped (``CODERAG_MAX_FILE_BYTES``, default 1 MiB).
    """

    home: Path
    weaviate_url: str | None
    weaviate_grpc_port: int
    weaviate_binary: str | None
    voyage_api_key: str | None
    voyage_model: str
    max_file_bytes: int
    collection: str = "CodeChunk"
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> "Settings":
        """Read the environment now (tests change it between calls)."""
        home = Path(os.environ.get("CODERAG_HOME") or Path.home() / ".local/share/coderag")
        return cls(
            home=home.expanduser(),
            weaviate_url=os.environ.get("WEAVIATE_URL") or None,
            weaviate_grpc_port=_env_int("WEAVIATE_GRPC_PORT", 50051),
            weaviate_binary=os.environ.get("WEAVIATE_BINARY") or None,
            voyage_api_key=os.environ.get("VOYAGE_API_KEY") or None,
            voyage_model=os.environ.get("CODERAG_VOYAGE_MODEL", "voyage-code-3"),
            max_file_bytes=_env_int("CODERAG_MAX_FILE_BYTES", 1024 * 1024),
        )
