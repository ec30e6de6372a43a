"""User-id pseudonymisation for the query log.

With ``CODERAG_HASH_USER_IDS=1`` every stored user id (``queries.user``, ``feedback.user``)
is ``HMAC-SHA256(key=CODERAG_USER_HASH_SALT, msg=user_id)`` as 64 lowercase hex
characters, instead of the raw id (Slack ``U…``, the CLI's login name). The same id always
maps to the same digest, so per-user counts and one-vote-per-user still work, but the raw
id cannot be recovered without the salt (a plain, unkeyed hash of a workspace's few
thousand user ids could be reversed by trying them all). The salt is a secret: keep it
stable (changing it splits every user in two) and at least 16 characters long.
"""
from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from common.errors import BadInput

MIN_SALT_CHARS = 16


@dataclass(frozen=True)
class UserHasher:
    """``hasher(user_id) -> str | None``: the id, or its HMAC hex when ``salt`` is set.

    ``None`` and ``""`` stay ``None`` (no user known).
    """

    salt: str | None = None

    @classmethod
    def from_env(cls) -> "UserHasher":
        """From ``CODERAG_HASH_USER_IDS`` / ``CODERAG_USER_HASH_SALT``.

        Raises :class:`BadInput` when hashing is on without a salt of at least 16 characters.
        """
        from common.settings import QueryLogEnv

        q = QueryLogEnv.from_env()
        if not q.hash_user_ids:
            return cls(None)
        salt = q.user_hash_salt
        if len(salt) < MIN_SALT_CHARS:
            raise BadInput(f"CODERAG_HASH_USER_IDS=1 needs CODERAG_USER_HASH_SALT "
                           f"(a secret of at least {MIN_SALT_CHARS} characters)")
        return cls(salt)

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
