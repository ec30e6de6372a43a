"""Teams settings and request authentication (Microsoft 365 Agents SDK, MSAL).

| variable | SDK's own name (also read) | meaning |
|---|---|---|
| ``CODERAG_TEAMS_CLIENT_ID`` | ``CONNECTIONS__SERVICE_CONNECTION__SETTINGS__CLIENTID`` | the bot's Entra app (client) id |
| ``CODERAG_TEAMS_CLIENT_SECRET`` | ``CONNECTIONS__SERVICE_CONNECTION__SETTINGS__CLIENTSECRET`` | its client secret |
| ``CODERAG_TEAMS_TENANT_ID`` | ``CONNECTIONS__SERVICE_CONNECTION__SETTINGS__TENANTID`` | its tenant (single-tenant bots) |
| ``CODERAG_TEAMS`` | — | ``1``: serve Teams without a client id (anonymous, dev only) |

With a client id every ``POST /api/messages`` must carry ``Authorization: Bearer <JWT>``
signed by Bot Framework / Entra for that client id (the SDK's ``JwtTokenValidator``:
signature from the issuer's JWKS, audience, tenant binding); anything else gets 401.
Outgoing replies get tokens through MSAL (``MsalConnectionManager``, client credentials).

Anonymous mode (no validation, no outgoing token) is only possible when no client id is
configured; ``coderag serve`` logs a warning then.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from jwt import PyJWTError
from microsoft_agents.authentication.msal import MsalConnectionManager
from microsoft_agents.hosting.core import AgentAuthConfiguration, ClaimsIdentity
from microsoft_agents.hosting.core.authorization.jwt import JwtTokenValidator

from common.settings import TeamsSettings

log = logging.getLogger(__name__)

SDK_PREFIX = "CONNECTIONS__SERVICE_CONNECTION__SETTINGS__"
ANONYMOUS_WARNING = ("Teams runs in ANONYMOUS mode: /api/messages accepts unauthenticated requests and "
                     "replies without a token. Set CODERAG_TEAMS_CLIENT_ID, CODERAG_TEAMS_CLIENT_SECRET "
                     "and CODERAG_TEAMS_TENANT_ID in production.")


@dataclass(frozen=True)
class TeamsAuth:
    """The bot's Entra identity; ``client_id`` empty = anonymous mode."""

    client_id: str = ""
    client_secret: str = ""
    tenant_id: str = ""

    @classmethod
    def from_settings(cls, t: TeamsSettings) -> "TeamsAuth":
        """The identity in the ``teams`` group read at start-up (``CODERAG_TEAMS_*``, or
        the SDK's ``CONNECTIONS__…`` names)."""
        return cls(client_id=t.client_id.strip(), client_secret=t.client_secret.strip(), tenant_id=t.tenant_id.strip())

    @property
    def anonymous(self) -> bool:
        """True when no client id is configured (no JWT validation)."""
        return not self.client_id

    def configuration(self) -> AgentAuthConfiguration:
        """The SDK's auth configuration (``ANONYMOUS_ALLOWED`` only without a client id)."""
        return AgentAuthConfiguration(client_id=self.client_id or None, client_secret=self.client_secret or None,
                                      tenant_id=self.tenant_id or None, anonymous_allowed=self.anonymous,
                                      connection_name="SERVICE_CONNECTION")

    def connections(self, config: AgentAuthConfiguration | None = None) -> MsalConnectionManager:
        """MSAL connections (one ``SERVICE_CONNECTION``) for outgoing tokens."""
        return MsalConnectionManager(connections_configurations={"SERVICE_CONNECTION": config or self.configuration()})


class Unauthorized(Exception):
    """The request may not be processed; ``str(exc)`` is safe to return (HTTP 401)."""


async def authenticate(header: str | None, config: AgentAuthConfiguration) -> ClaimsIdentity:
    """Validate the ``Authorization`` header value.

    Returns the token's claims, or the anonymous identity when there is no header and
    ``config.ANONYMOUS_ALLOWED``. Raises :class:`Unauthorized` for a missing header (auth
    on), a header that is not ``Bearer <token>``, or a token the SDK's
    ``JwtTokenValidator`` rejects (signature, audience, issuer/tenant). Fetching the
    issuer's signing keys may take a network round trip (cached afterwards).
    """
    validator = JwtTokenValidator(config)
    if not header:
        if config.ANONYMOUS_ALLOWED:
            return validator.get_anonymous_claims()
        raise Unauthorized("Authorization header not found")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("Invalid authorization header format")
    try:
        return await validator.validate_token(token.strip())
    except (PyJWTError, ValueError, KeyError) as exc:
        log.warning("Teams JWT rejected: %s", type(exc).__name__)
        raise Unauthorized("Invalid token or authentication failed.") from None
    except Exception as exc:  # JWKS unreachable and the like: still no entry
        log.warning("Teams JWT validation failed: %s", exc)
        raise Unauthorized("Token could not be validated.") from None
