"""The admin page's settings group (``AdminSettings``)."""
from __future__ import annotations

from pydantic import field_validator

from common.settings import _Group, var


class AdminSettings(_Group):
    """The admin page (``bot/admin``): who may sign in, and how."""

    token: str = var("CODERAG_ADMIN_TOKEN", "", "token that signs in to `/admin` (at least 24 characters)", expected="a token of at least 24 characters",
                     secret=True, default_text="no token sign-in")
    users: frozenset[str] = var("CODERAG_ADMIN_USERS", frozenset, "comma-separated Slack user ids or emails who may "
                                "sign in to `/admin` with Slack", kind="text", default_text="none")
    slack_client_id: str = var("SLACK_CLIENT_ID", "", "the Slack app's client id: \"Sign in with Slack\" on `/admin`",
                               default_text="Slack sign-in off")
    slack_client_secret: str = var("SLACK_CLIENT_SECRET", "", "the Slack app's client secret", secret=True)
    public_url: str = var("CODERAG_PUBLIC_URL", "", "the address people reach `coderag serve` at "
                          "(`https://coderag.example.com`): the Slack sign-in's redirect, links in review "
                          "notices, secure cookies when https", default_text="the request's own address")
    session_secret: str = var("CODERAG_ADMIN_SESSION_SECRET", "", "key that signs `/admin` session cookies",
                              secret=True, default_text="generated once, kept in the database")
    session_hours: float = var("CODERAG_ADMIN_SESSION_HOURS", 12.0, "an `/admin` sign-in lasts this long (hours)",
                               gt=0)
    review_channel: str = var("CODERAG_REVIEW_CHANNEL", "", "channel id where drafts of `review` channels are "
                              "announced (seeds the value the admin page changes)", default_text="the page only")

    @field_validator("users", mode="before")
    @classmethod
    def _users(cls, v):
        if isinstance(v, str):
            return frozenset(x.strip().lower() for x in v.split(",") if x.strip())
        return frozenset(str(x).lower() for x in v)

    @field_validator("token", mode="after")
    @classmethod
    def _long_token(cls, v: str) -> str:
        if v and len(v.strip()) < 24:
            raise ValueError("at least 24 characters (e.g. `openssl rand -hex 24`)")
        return v.strip()

    @property
    def slack_login(self) -> bool:
        """True when "Sign in with Slack" is configured."""
        return bool(self.slack_client_id and self.slack_client_secret)

    @property
    def enabled(self) -> bool:
        """True when some sign-in is configured (else ``/admin`` is not served)."""
        return bool(self.token) or self.slack_login
