"""The fake Slack (:class:`helpers.fake_slack.FakeSlack`) with "Sign in with Slack"
(OpenID Connect): the authorize page (``GET /openid/connect/authorize``, which signs
in :attr:`FakeSlackOIDC.user` at once and sends the browser back with a code), and the
Web API methods ``openid.connect.token`` (client id and secret in HTTP Basic auth, as
slack_sdk sends them) and ``openid.connect.userInfo`` (the bearer access token)."""
from __future__ import annotations

import base64
import json
import secrets
import time
from urllib.parse import parse_qs, urlencode

from .fake_http import Reply, Request
from .fake_slack import TEAM_ID, FakeSlack

CLIENT_ID = "1234567890.0987654321"
CLIENT_SECRET = "oidc-client-secret-0123456789abcdef"


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


class FakeSlackOIDC(FakeSlack):
    """``user``: who the authorize page signs in (``id``, ``email``, ``name``)."""

    def __init__(self, user: dict | None = None) -> None:
        super().__init__()
        self.user = user or {"id": "UADMIN001", "email": "ada@acme.test", "name": "Ada Admin"}
        self.codes: dict[str, dict] = {}   # code -> {nonce, redirect_uri, user}
        self.tokens: dict[str, dict] = {}  # access token -> user

    def respond(self, request: Request) -> Reply:
        if request.path == "/openid/connect/authorize":
            q = request.query
            code = secrets.token_hex(8)
            with self.lock:
                self.codes[code] = {"nonce": q.get("nonce"), "redirect_uri": q.get("redirect_uri"),
                                    "client_id": q.get("client_id"), "user": dict(self.user)}
            target = f"{q['redirect_uri']}?{urlencode({'code': code, 'state': q.get('state', '')})}"
            return Reply(302, None, {"Location": target})
        if request.path == "/api/openid.connect.token":
            body = {k: v[0] for k, v in parse_qs(request.raw.decode()).items()}
            return Reply(200, self._token(body, request.headers.get("Authorization", "")))
        if request.path == "/api/openid.connect.userInfo":
            auth = request.headers.get("Authorization", "")
            user = self.tokens.get(auth.removeprefix("Bearer ").strip())
            if user is None:
                return Reply(200, {"ok": False, "error": "invalid_auth"})
            return Reply(200, {"ok": True, "sub": user["id"], "https://slack.com/user_id": user["id"],
                               "https://slack.com/team_id": TEAM_ID, "email": user["email"], "email_verified": True,
                               "name": user["name"]})
        return super().respond(request)

    def _token(self, body: dict, auth: str) -> dict:
        expected = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if auth != expected:
            return {"ok": False, "error": "invalid_client"}
        with self.lock:
            grant = self.codes.pop(body.get("code", ""), None)
        if grant is None or grant["redirect_uri"] != body.get("redirect_uri"):
            return {"ok": False, "error": "invalid_code"}
        access = "xoxp-" + secrets.token_hex(12)
        self.tokens[access] = grant["user"]
        now = int(time.time())
        claims = {"iss": "https://slack.com", "sub": grant["user"]["id"], "aud": CLIENT_ID, "exp": now + 300,
                  "iat": now, "nonce": grant["nonce"], "https://slack.com/user_id": grant["user"]["id"],
                  "https://slack.com/team_id": TEAM_ID, "email": grant["user"]["email"]}
        id_token = f"{_b64({'alg': 'RS256', 'typ': 'JWT'})}.{_b64(claims)}.c2lnbmF0dXJl"
        return {"ok": True, "access_token": access, "token_type": "Bearer", "id_token": id_token}
