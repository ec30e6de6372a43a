"""Slack settings: the Slack app's view of :class:`common.settings.SlackEnv` and
:class:`common.settings.ChatSettings` (variables, types and defaults are declared there;
the composition root reads them once and hands them over)."""
from __future__ import annotations

from dataclasses import dataclass, field

from bot.chat.links import REPO_URL_EXAMPLES, parse_repo_urls  # noqa: F401  (re-exported)
from common.errors import BadInput
from common.settings import ChatSettings, SlackEnv

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
    def from_settings(cls, slack: SlackEnv, chat: ChatSettings) -> "SlackSettings":
        """The Slack app's view of the ``slack`` and ``chat`` groups read at start-up;
        raises ``BadInput`` on a malformed ``CODERAG_REPO_URLS``."""
        api_url = slack.api_url if slack.api_url.endswith("/") else slack.api_url + "/"
        channels = frozenset(c.strip() for c in slack.onboarding_channels.split(",") if c.strip())
        return cls(bot_token=slack.bot_token, signing_secret=slack.signing_secret, app_token=slack.app_token,
                   api_url=api_url, onboarding_channels=channels, repo_urls=parse_repo_urls(chat.repo_urls),
                   stale_hours=chat.stale_hours, workers=max(2, slack.workers))

    def check(self) -> None:
        """Raise ``BadInput`` when a token the chosen mode needs is missing."""
        if not self.bot_token:
            raise BadInput("SLACK_BOT_TOKEN is not set (the bot token, xoxb-...)")
        if not self.socket_mode and not self.signing_secret:
            raise BadInput("SLACK_SIGNING_SECRET is not set (needed in HTTP mode; "
                           "set SLACK_APP_TOKEN for Socket Mode instead)")
