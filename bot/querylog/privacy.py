"""User-id pseudonymisation for the query log — **on by default**.

Every stored user id (``queries.user``, ``feedback.user``) is
``HMAC-SHA256(key=salt, msg=user_id)`` as 64 lowercase hex characters, instead of the raw
id (Slack ``U…``, the Teams Entra object id, the CLI's login name). The same id always
maps to the same digest, so per-user counts and one-vote-per-user still work, but the raw
id cannot be recovered without the salt (a plain, unkeyed hash of a workspace's few
thousand user ids could be reversed by trying them all).

The salt is ``CODERAG_USER_HASH_SALT`` when configured (a secret of at least 16
characters); otherwise coderag generates one on first start (32 random bytes, hex, from
:mod:`secrets`) and keeps it in the database (table ``app_secrets``, row
``user_hash_salt``), so every replica and every restart uses the same one. Keep it stable:
changing it splits every user in two. ``CODERAG_HASH_USER_IDS=0`` (or ``off``) stores raw
ids instead.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone

from common.errors import BadInput
from common.settings import QueryLogSettings

MIN_SALT_CHARS = 16
SALT_NAME = "user_hash_salt"


def stored_salt(sessions) -> str:
    """The generated salt kept in the database (``app_secrets``), created on first use.

    Concurrent first starts are safe: the row's primary key lets one insert win and the
    others read its value. Raises SQLAlchemy errors when the database is unusable."""
    from sqlalchemy.exc import IntegrityError

    from .models import AppSecret

    with sessions() as s:
        row = s.get(AppSecret, SALT_NAME)
        if row is not None:
            return row.value
    try:
        with sessions() as s, s.begin():
            s.add(AppSecret(name=SALT_NAME, value=secrets.token_hex(32), created_at=datetime.now(timezone.utc)))
    except IntegrityError:
        pass  # another process inserted it first
    with sessions() as s:
        return s.get(AppSecret, SALT_NAME).value


@dataclass(frozen=True)
class UserHasher:
    """``hasher(user_id) -> str | None``: the id, or its HMAC hex when ``salt`` is set.

    ``None`` and ``""`` stay ``None`` (no user known).
    """

    salt: str | None = None

    @classmethod
    def from_settings(cls, q: QueryLogSettings, sessions=None) -> "UserHasher":
        """From the query-log group read at start-up: ``CODERAG_HASH_USER_IDS`` (default on)
        and ``CODERAG_USER_HASH_SALT``; without a configured salt, the one kept in the
        database of ``sessions`` (:func:`stored_salt`).

        Raises :class:`BadInput` when a configured salt is shorter than 16 characters, or
        when hashing is on with neither a salt nor ``sessions``.
        """
        if not q.hash_user_ids:
            return cls(None)
        salt = q.user_hash_salt
        if salt:
            if len(salt) < MIN_SALT_CHARS:
                raise BadInput(f"CODERAG_USER_HASH_SALT must be a secret of at least {MIN_SALT_CHARS} characters")
            return cls(salt)
        if sessions is None:
            raise BadInput(f"hashing user ids needs CODERAG_USER_HASH_SALT (a secret of at least "
                           f"{MIN_SALT_CHARS} characters) or a database to keep a generated one in")
        return cls(stored_salt(sessions))

    @property
    def enabled(self) -> bool:
        return self.salt is not None

    def __call__(self, user_id: str | None) -> str | None:
        if not user_id:
            return None
        if self.salt is None:
            return user_id
        return hash_user_id(user_id, self.salt)


def hash_user_id(user_id: str, salt: str) -> str:
    """HMAC-SHA256 of ``user_id`` (UTF-8) keyed with ``salt`` (UTF-8), hex (64 chars)."""
    return hmac.new(salt.encode("utf-8"), user_id.encode("utf-8"), hashlib.sha256).hexdigest()
