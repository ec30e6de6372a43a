"""Slack settings, read from the environment.

| variable | meaning |
|---|---|
| ``SLACK_BOT_TOKEN`` | bot token (``xoxb-…``), required |
| ``SLACK_SIGNING_SECRET`` | verifies HTTP requests (required in HTTP mode) |
| ``SLACK_APP_TOKEN`` | app-level token (``xapp-…``): when set, Socket Mode is used |
| ``SLACK_API_URL`` | Web API base URL (default ``https://slack.com/api/``) |
| ``CODERAG_ONBOARDING_CHANNELS`` | comma-separated channel ids answered without a mention |
| ``CODERAG_REPO_URLS`` | JSON ``{"repo": "url template"}`` for citation links |
| ``CODERAG_STALE_HOURS`` | an index older than this is flagged stale in ``status`` (24) |
| ``CODERAG_SLACK_WORKERS`` | threads running listeners and answers (16) |
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from bot.chat.links import REPO_URL_EXAMPLES, parse_repo_urls  # noqa: F401  (re-exported)
from common.errors import BadInput

DEFAULT_API_URL = "https://slack.com/api/"


@dataclass
class SlackSettings:
    """Everything the Slack app needs besides the answer service."""

    bot_token: str = ""
    signing_secret: str = ""
    app_token: str = ""
    api_url: str = DEFAULT_API_URL
    onboarding_channels: frozenset[str] = frozenset()
    repo_urls: dict[str, str] = field(default_factory=dict)
    stale_hours: float = 24.0
    workers: int = 16

    @property
    def socket_mode(self) -> bool:
        """True when an app-level token is set: connect out over Socket Mode."""
        return bool(self.app_token)

    @classmethod
    def from_env(cls, env: dict | None = None) -> "SlackSettings":
        """Read the settings; raises ``BadInput`` on a malformed ``CODERAG_REPO_URLS``."""
        env = os.environ if env is None else env
        api_url = env.get("SLACK_API_URL") or DEFAULT_API_URL
        if not api_url.endswith("/"):
            api_url += "/"
        channels = frozenset(c.strip() for c in env.get("CODERAG_ONBOARDING_CHANNELS", "").split(",") if c.strip())
        return cls(bot_token=env.get("SLACK_BOT_TOKEN", ""),
                   signing_secret=env.get("SLACK_SIGNING_SECRET", ""),
                   app_token=env.get("SLACK_APP_TOKEN", ""),
                   api_url=api_url,
                   onboarding_channels=channels,
                   repo_urls=parse_repo_urls(env.get("CODERAG_REPO_URLS", "")),
                   stale_hours=float(env.get("CODERAG_STALE_HOURS", "24")),
                   workers=max(2, int(env.get("CODERAG_SLACK_WORKERS", "16"))))

    def check(self) -> None:
        """Raise ``BadInput`` when a token the chosen mode needs is missing."""
        if not self.bot_token:
            raise BadInput("SLACK_BOT_TOKEN is not set (the bot token, xoxb-...)")
        if not self.socket_mode and not self.signing_secret:
            raise BadInput("SLACK_SIGNING_SECRET is not set (needed in HTTP mode; "
                           "set SLACK_APP_TOKEN for Socket Mode instead)")
