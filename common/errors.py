"""Errors the CLI turns into one-line messages and a non-zero exit (never a traceback),
and the one catalogue of exit codes (:class:`ExitCode`, listed in docs/commands.md).

Every :class:`CoderagError` subclass has its own code, so a script can tell the
failures apart; ``tests/e2e/test_exit_codes.py`` checks that no two classes share one.
"""
from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Exit status of ``coderag`` (0 = success). 2 is also what click uses for a usage
    error (unknown option, missing argument); 130 and 143 follow the shell convention
    128 + signal number (SIGINT, SIGTERM)."""

    OK = 0
    FAILURE = 1                  # an unexpected error, or a declined confirmation prompt
    USAGE = 2                    # bad argument, input file or setting (BadInput; click usage errors)
    WEAVIATE_UNAVAILABLE = 3     # Weaviate could not be started or reached
    EMPTY_INDEX = 4              # nothing indexed (or nothing in the repos asked for)
    MODEL_MISMATCH = 5           # the index was built with another embedding model
    DATABASE_ERROR = 6           # the SQL database could not be opened or migrated
    UNKNOWN_SYMBOL = 7           # `impact`: no definition matches
    AMBIGUOUS_SYMBOL = 8         # `impact --json` / no TTY: several definitions match
    NOT_A_GIT_REPOSITORY = 9     # `index PATH`: PATH is not inside a Git work tree
    EMBEDDING_UNAVAILABLE = 10   # the embedding service (Voyage) refused or is unreachable
    MIRROR_FAILED = 11           # `sync repo`: git clone/fetch of the mirror failed, unknown branch
    SCHEDULER_RUNNING = 12       # `serve`: another process already runs the scheduler
    REPO_INDEX_BUSY = 13         # another index run of the same repo kept its lock too long
    STALE_RUN = 14               # this run lost its repo's lock while stalled; it committed nothing
    CHAT_UNAVAILABLE = 15        # `serve`: Slack refused the bot token or could not be reached at start
    INTERRUPTED = 130            # Ctrl-C, or a prompt aborted
    TERMINATED = 143             # SIGTERM (docker stop, Kubernetes)


class CoderagError(Exception):
    """Base of every expected, user-facing failure. ``str(err)`` is the message shown."""

    exit_code: ExitCode = ExitCode.FAILURE


class NotAGitRepository(CoderagError):
    """The path given to ``coderag index`` is not inside a Git work tree."""

    exit_code = ExitCode.NOT_A_GIT_REPOSITORY


class WeaviateUnavailable(CoderagError):
    """Weaviate could not be started (embedded) or reached (``WEAVIATE_URL``)."""

    exit_code = ExitCode.WEAVIATE_UNAVAILABLE


class EmptyIndex(CoderagError):
    """A query ran against an index (or repo filter) with no chunks in it."""

    exit_code = ExitCode.EMPTY_INDEX


class ModelMismatch(CoderagError):
    """The index holds vectors from a different embedding model than the one configured."""

    exit_code = ExitCode.MODEL_MISMATCH


class BadInput(CoderagError):
    """An argument, input file or setting is malformed (bad --top-k, bad JSONL line,
    ``CODERAG_STALE_HOURS=abc``, ...)."""

    exit_code = ExitCode.USAGE


class ChatUnavailable(CoderagError):
    """Slack refused the bot token (``invalid_auth``) or could not be reached when
    ``serve`` started."""

    exit_code = ExitCode.CHAT_UNAVAILABLE


class EmbeddingUnavailable(CoderagError):
    """The embedding service (Voyage) refused the request or could not be reached."""

    exit_code = ExitCode.EMBEDDING_UNAVAILABLE


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
