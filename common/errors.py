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
