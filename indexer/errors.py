"""Errors the CLI turns into one-line messages and a non-zero exit (never a traceback)."""


class CoderagError(Exception):
    """Base of every expected, user-facing failure. ``str(err)`` is the message shown."""

    exit_code = 1


class NotAGitRepository(CoderagError):
    """The path given to ``coderag index`` is not inside a Git work tree."""

    exit_code = 2


class WeaviateUnavailable(CoderagError):
    """Weaviate could not be started (embedded) or reached (``WEAVIATE_URL``)."""

    exit_code = 3


class EmptyIndex(CoderagError):
    """A query ran against an index (or repo filter) with no chunks in it."""

    exit_code = 4


class ModelMismatch(CoderagError):
    """The index holds vectors from a different embedding model than the one configured."""

    exit_code = 5


class BadInput(CoderagError):
    """An argument or input file is malformed (bad --top-k, bad JSONL line, ...)."""

    exit_code = 2


class EmbeddingUnavailable(CoderagError):
    """The embedding service (Voyage) refused the request or could not be reached."""

    exit_code = 3


def as_coderag_error(exc: BaseException) -> CoderagError | None:
    """``exc`` as the expected failure it stands for, or ``None`` for a bug.

    A Weaviate client error (``weaviate.exceptions.WeaviateBaseError``: e.g. the server was
    killed, and the gRPC channel gives up with a multi-line ``_InactiveRpcError`` dump) is a
    :class:`WeaviateUnavailable` whose message is one line: the dump's first line plus, when
    the dump names one, the gRPC status (e.g. ``UNAVAILABLE``), secrets redacted.
    """
    try:
        from weaviate.exceptions import WeaviateBaseError
    except ImportError:  # pragma: no cover - weaviate is a dependency
        return None
    if isinstance(exc, CoderagError):
        return exc
    if not isinstance(exc, WeaviateBaseError):
        return None
    import re

    from .redact import redact_text

    text = redact_text(str(exc))
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    first = re.sub(r"\s*Details:\s*<_?\w*RpcError.*$", "", first)
    status = re.search(r"StatusCode\.([A-Z_]+)", text)
    details = re.search(r'details = "([^"]*)"', text)
    reason = f" (gRPC {status.group(1)}{': ' + details.group(1) if details else ''})" if status else ""
    return WeaviateUnavailable(f"Weaviate failed: {first[:300]}{reason[:300]}")
