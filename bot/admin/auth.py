"""Who may use ``/admin``, and how they prove it.

* **Token sign-in**: ``CODERAG_ADMIN_TOKENS`` gives each admin a token of their own
  (``name:token`` pairs, or ``name:sha256:HEX`` with only the token's digest), and the
  change log names them; ``CODERAG_ADMIN_TOKEN``, one token shared by every admin, signs
  in as ``admin``. The form compares the token with each in constant time; ten wrong
  tokens from one address within five minutes get 429 for the rest of that window. The
  session remembers the admin's name and a fingerprint of their token, so changing or
  removing a token signs its sessions out.
* **Sign in with Slack** (``SLACK_CLIENT_ID``, ``SLACK_CLIENT_SECRET``): OpenID Connect's
  authorization-code flow against Slack (``/openid/connect/authorize`` on the host of
  ``SLACK_API_URL``, then ``openid.connect.token`` and ``openid.connect.userInfo``
  through slack_sdk's ``WebClient``), with a ``state`` and a ``nonce`` per attempt. The
  ID token comes straight from Slack's token endpoint over TLS, so its issuer is not
  re-checked by signature (OpenID Connect Core 3.1.3.7); its audience, nonce and expiry
  are. The signed-in user is an admin while their Slack id or email is in
  ``CODERAG_ADMIN_USERS`` (checked on every request, so removing someone takes effect at once).

Sessions are Starlette's signed cookies (itsdangerous), ``HttpOnly``, ``SameSite=Lax``,
``Secure`` when ``CODERAG_PUBLIC_URL`` is https, limited to ``/admin``. Every form
carries the session's CSRF token (:func:`csrf_token`); a POST without it, or with
another, is refused with 403 (:func:`check_csrf`). Tokens and secrets never reach a
page or a log line.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request

log = logging.getLogger(__name__)

SESSION_COOKIE = "coderag_admin"
CSRF_FIELD = "csrf_token"
MAX_FAILURES = 10
FAILURE_WINDOW_S = 300.0


@dataclass(frozen=True)
class Identity:
    """Who is signed in: ``via`` is ``token`` or ``slack``; ``id`` the Slack user id, or
    the admin's name in ``CODERAG_ADMIN_TOKENS`` (``admin`` for ``CODERAG_ADMIN_TOKEN``);
    ``name`` and ``email`` as Slack gave them."""

    via: str
    id: str
    name: str = ""
    email: str = ""
    team: str = ""
    fingerprint: str = ""

    @property
    def actor(self) -> str:
        """How the change log names this person."""
        if self.via == "token":
            return self.id
        who = self.name or self.id
        return f"{who} <{self.email}> ({self.id})" if self.email else f"{who} ({self.id})"

    def to_session(self) -> dict[str, str]:
        """The session's copy (no secret: the token is kept only as a keyed fingerprint)."""
        return {"via": self.via, "id": self.id, "name": self.name, "email": self.email, "team": self.team,
                "fp": self.fingerprint}

    @classmethod
    def from_session(cls, data: Any) -> "Identity | None":
        """The identity in a session, ``None`` when there is none (or it is malformed)."""
        if not isinstance(data, dict) or data.get("via") not in ("token", "slack") or not data.get("id"):
            return None
        return cls(via=data["via"], id=str(data["id"]), name=str(data.get("name") or ""),
                   email=str(data.get("email") or ""), team=str(data.get("team") or ""),
                   fingerprint=str(data.get("fp") or ""))


def token_fingerprint(token: str, key: str) -> str:
    """A keyed digest of an admin token as the settings hold it (the token, or
    ``sha256:HEX``), HMAC-SHA256 with the session key, kept in the session instead of the
    token, so a changed token ends its sessions."""
    return hmac.new(key.encode(), b"admin-token:" + token.encode(), hashlib.sha256).hexdigest()[:32]


def token_matches(given: str, token: str) -> bool:
    """True when ``given`` (typed on the sign-in form) is ``token`` as the settings hold
    it: the token itself, or ``sha256:HEX``, its SHA-256 digest. Constant time."""
    if token.startswith("sha256:"):
        digest = hashlib.sha256(given.encode()).hexdigest()
        return hmac.compare_digest(digest.encode(), token[len("sha256:"):].lower().encode())
    return hmac.compare_digest(given.encode(), token.encode())


class Gate:
    """The admin check and the token sign-in's throttle, for one admin settings group
    (``settings``) and session key (``key``)."""

    def __init__(self, settings: Any, key: str):
        self.settings, self.key = settings, key
        self._failures: dict[str, deque] = defaultdict(deque)

    def identity(self, request: Request) -> Identity | None:
        """The signed-in identity of ``request`` (``None``: nobody)."""
        return Identity.from_session(request.session.get("user"))

    def is_admin(self, who: Identity | None) -> bool:
        """True while ``who`` may use the page (re-checked against the settings each time)."""
        if who is None:
            return False
        if who.via == "token":
            token = self.settings.named_tokens.get(who.id)
            return bool(token) and hmac.compare_digest(who.fingerprint, token_fingerprint(token, self.key))
        if not self.settings.slack_login:
            return False
        users = self.settings.users
        return who.id.lower() in users or bool(who.email and who.email.lower() in users)

    def check_token(self, request: Request, given: str) -> Identity | None:
        """The identity of the admin whose token ``given`` is; ``None`` when it is none of
        them (a failure counted for the client's address). Raises :class:`Throttled` after
        too many."""
        client = request.client.host if request.client else "?"
        now = time.monotonic()
        failures = self._failures[client]
        while failures and now - failures[0] > FAILURE_WINDOW_S:
            failures.popleft()
        if len(failures) >= MAX_FAILURES:
            raise Throttled()
        given = (given or "").strip()
        # every token is compared (no early exit), so the time taken does not say which matched
        matched = [(name, token) for name, token in sorted(self.settings.named_tokens.items())
                   if token_matches(given, token)] if given else []
        if matched:
            failures.clear()
            name, token = matched[0]
            return Identity(via="token", id=name, name=name, fingerprint=token_fingerprint(token, self.key))
        failures.append(now)
        log.warning("admin: wrong token from %s (%d in the last %d s)", client, len(failures), int(FAILURE_WINDOW_S))
        return None


class Throttled(Exception):
    """Too many wrong tokens from one address: wait for the window to pass."""


# --------------------------------------------------------------------------- CSRF

def csrf_token(request: Request) -> str:
    """The session's CSRF token (made on first use)."""
    token = request.session.get("csrf")
    if not token:
        token = secrets.token_urlsafe(32)
        request.session["csrf"] = token
    return token


def check_csrf(request: Request, form: Any) -> bool:
    """True when the form's ``csrf_token`` is the session's (constant-time)."""
    expected = request.session.get("csrf") or ""
    given = form.get(CSRF_FIELD) if form is not None else None
    return bool(expected) and isinstance(given, str) and hmac.compare_digest(given.encode(), expected.encode())


def sign_in(request: Request, who: Identity) -> None:
    """Start a fresh session for ``who`` (the old one, and its CSRF token, are dropped)."""
    request.session.clear()
    request.session["user"] = who.to_session()
    request.session["at"] = int(time.time())
    csrf_token(request)


# --------------------------------------------------------------------------- Sign in with Slack

def slack_web_base(api_url: str) -> str:
    """Slack's web host for the authorize page, from ``SLACK_API_URL``
    (``https://slack.com/api/`` → ``https://slack.com``)."""
    base = api_url.rstrip("/")
    return base[: -len("/api")] if base.endswith("/api") else base


def authorize_url(*, api_url: str, client_id: str, redirect_uri: str, state: str, nonce: str, team: str = "") -> str:
    """Slack's OpenID Connect authorize URL for one sign-in attempt."""
    query = {"response_type": "code", "scope": "openid email profile", "client_id": client_id,
             "state": state, "nonce": nonce, "redirect_uri": redirect_uri}
    if team:
        query["team"] = team
    return f"{slack_web_base(api_url)}/openid/connect/authorize?{urlencode(query)}"


class SignInFailed(Exception):
    """The Slack sign-in could not be completed (the message says why, without secrets)."""


def _claims(id_token: str) -> dict:
    """The payload of a JWT (no signature check: see the module docstring)."""
    try:
        payload = id_token.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        raise SignInFailed("Slack returned an unreadable ID token") from None


def slack_identity(*, api_url: str, client_id: str, client_secret: str, code: str, redirect_uri: str,
                   nonce: str) -> Identity:
    """Exchange ``code`` for tokens (``openid.connect.token``), check the ID token's
    audience, nonce and expiry, and read the user (``openid.connect.userInfo``).
    Raises :class:`SignInFailed`."""
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    try:
        tokens = WebClient(base_url=api_url, timeout=15).openid_connect_token(
            client_id=client_id, client_secret=client_secret, code=code, redirect_uri=redirect_uri)
    except SlackApiError as exc:
        raise SignInFailed(f"Slack refused the sign-in ({(exc.response or {}).get('error', 'error')})") from None
    except OSError as exc:
        raise SignInFailed(f"cannot reach Slack ({type(exc).__name__})") from None
    claims = _claims(str(tokens.get("id_token") or ""))
    aud = claims.get("aud")
    if client_id not in ([aud] if isinstance(aud, str) else list(aud or [])):
        raise SignInFailed("the ID token was issued to another app")
    if not nonce or not hmac.compare_digest(str(claims.get("nonce") or ""), nonce):
        raise SignInFailed("the ID token does not answer this sign-in (nonce)")
    if float(claims.get("exp") or 0) < time.time() - 60:
        raise SignInFailed("the ID token has expired")
    try:
        info = WebClient(token=tokens.get("access_token"), base_url=api_url, timeout=15).openid_connect_userInfo()
    except SlackApiError as exc:
        raise SignInFailed(f"Slack refused the user lookup ({(exc.response or {}).get('error', 'error')})") from None
    user = str(info.get("https://slack.com/user_id") or info.get("sub") or "")
    if not user or user != str(claims.get("https://slack.com/user_id") or claims.get("sub") or user):
        raise SignInFailed("Slack named no user, or another one than the ID token")
    return Identity(via="slack", id=user, name=str(info.get("name") or ""), email=str(info.get("email") or ""),
                    team=str(info.get("https://slack.com/team_id") or ""))
