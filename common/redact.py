"""Keeping secrets out of logs, errors, status output and database rows.

Two kinds of secret are masked with ``***``:

* **credentials inside URLs** — ``https://user:password@host/…`` (and a lone
  ``https://token@host/…``), wherever they appear in a text (:func:`redact_url`,
  :func:`redact_text`);
* **known secret values** — the current value of every variable in
  :data:`SECRET_ENV_VARS` (tokens, API keys, webhook secrets, the hash salt), read from
  the environment when :func:`redact_text` runs, so a library that echoes a key in an
  error message is masked too. Values shorter than :data:`MIN_SECRET_CHARS` are not
  masked (they would mask ordinary words).

Redaction happens at the source (``Mirror`` formats redacted URLs) *and* at the
boundaries: :func:`redact_text` before an error is stored (``index_state.last_error``)
or printed, and :class:`RedactingFilter` on the log handlers of ``coderag`` (installed by
:func:`install_log_redaction`), which also redacts formatted tracebacks.
"""
from __future__ import annotations

import logging
import os
import re

# Every variable coderag reads whose value is a secret (see deploy/.env.example).
SECRET_ENV_VARS = (
    "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "ANTHROPIC_API_KEY", "VOYAGE_API_KEY",
    "CODERAG_GITHUB_WEBHOOK_SECRET", "CODERAG_GITLAB_WEBHOOK_TOKEN", "CODERAG_USER_HASH_SALT",
    "CODERAG_METRICS_TOKEN", "CODERAG_TEAMS_CLIENT_SECRET", "CODERAG_CONFLUENCE_API_TOKEN",
    "CODERAG_CONFLUENCE_PAT", "CONNECTIONS__SERVICE_CONNECTION__SETTINGS__CLIENTSECRET",
    "CODERAG_ADMIN_TOKEN", "CODERAG_ADMIN_SESSION_SECRET", "SLACK_CLIENT_SECRET", "CODERAG_ADMIN_TOKENS",
)
#: Secrets that list several ``name:secret`` pairs, comma-separated: each secret is masked too.
PAIRED_SECRET_ENV_VARS = ("CODERAG_ADMIN_TOKENS",)
MIN_SECRET_CHARS = 8
MASK = "***"

# scheme://userinfo@ — the userinfo runs to the LAST '@' of the authority (which ends at
# '/', '?', '#' or whitespace): a password holding a raw '@' is masked whole.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/?#\s'\"<>]*)@")
# A credential in a URL's query string (?token=..., &api_key=..., access_token, password,
# secret, sig, signature, auth): the parameter names services use for secrets in URLs.
_URL_QUERY_SECRET = re.compile(
    r"(?P<key>[?&;](?:[A-Za-z0-9_.-]*(?:token|key|secret|password|passwd|pwd|auth|sig|signature)"
    r"[A-Za-z0-9_.-]*)=)(?P<value>[^&#\s'\"<>]+)", re.IGNORECASE)


def _mask_userinfo(m: re.Match) -> str:
    scheme, info = m.group("scheme"), m.group("info")
    if ":" in info:
        user = info.split(":", 1)[0]
        return f"{scheme}{user + ':' if user else ''}{MASK}@"
    if scheme.lower().startswith("http") and info:
        return f"{scheme}{MASK}@"  # https://TOKEN@host: the token is the secret
    return m.group(0)  # ssh://git@host: a user name, not a secret


def redact_url(url: str) -> str:
    """``url`` with the password/token of its ``user:secret@`` part replaced by ``***``
    (a lone ``token@`` of an http(s) URL too); local paths, ``git@host:path`` and
    ``ssh://user@host`` are returned unchanged."""
    if not url:
        return url
    return _URL_QUERY_SECRET.sub(lambda m: m.group("key") + MASK, _URL_USERINFO.sub(_mask_userinfo, url, count=1))


def known_secrets(env=None) -> list[str]:
    """Current values of :data:`SECRET_ENV_VARS` worth masking, longest first."""
    env = os.environ if env is None else env
    values = {(env.get(name) or "").strip() for name in SECRET_ENV_VARS}
    for name in PAIRED_SECRET_ENV_VARS:
        values |= {pair.partition(":")[2].strip() for pair in (env.get(name) or "").split(",")}
    return sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)


def redact_text(text: str, env=None) -> str:
    """``text`` with every URL credential and every known secret value masked.

    Works on any text: an exception message, a traceback, a log line, a stored error.
    Non-strings are returned unchanged.
    """
    if not isinstance(text, str) or not text:
        return text
    out = _URL_QUERY_SECRET.sub(lambda m: m.group("key") + MASK, _URL_USERINFO.sub(_mask_userinfo, text))
    for secret in known_secrets(env):
        if secret in out:
            out = out.replace(secret, MASK)
    return out


class RedactingFilter(logging.Filter):
    """A handler filter that redacts the message, the formatted traceback and the stack
    of every record (:func:`redact_text`), keeping the record usable by any formatter.

    The format string and each string argument are redacted in place, so ``args`` keep
    their number and types (uvicorn's access formatter unpacks exactly five). Only when a
    secret would still show through a non-string argument is the record flattened to its
    final redacted text (``args`` cleared). ``exc_text`` becomes the redacted traceback,
    which ``logging.Formatter`` then prints instead of formatting it again."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_text(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact_text(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: redact_text(v) if isinstance(v, str) else v for k, v in record.args.items()}
        try:
            msg = record.getMessage()
        except Exception:  # a bad format string: keep what logging would have shown
            msg = str(record.msg)
        clean = redact_text(msg)
        if clean != msg:  # a secret inside a non-string argument (an exception, a URL object)
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info)
        return True


def install_log_redaction(*handlers: logging.Handler) -> None:
    """Add one :class:`RedactingFilter` to each of ``handlers`` (default: every handler of
    the root logger and of ``uvicorn``'s loggers). Idempotent."""
    if not handlers:
        found = list(logging.getLogger().handlers)
        for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
            found.extend(logging.getLogger(name).handlers)
        handlers = tuple(found)
    for h in handlers:
        if not any(isinstance(f, RedactingFilter) for f in h.filters):
            h.addFilter(RedactingFilter())
