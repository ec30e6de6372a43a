"""The freshness configuration of a running process, read when it is needed
(:class:`LiveFreshness`): the repositories and Confluence spaces kept fresh are the ones
in the database at that moment (seeded from the environment, changed on the admin page),
so a source added or removed on the page reaches the push webhooks, the scheduler's jobs
and ``coderag worker`` without a restart.
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import SQLAlchemyError

from .store import RunConfig

if TYPE_CHECKING:
    from common.settings import FreshnessSettings

log = logging.getLogger(__name__)


class LiveFreshness:
    """The environment's freshness group (``base``: webhook secrets, Confluence
    connection, index queue, safety period) with the sources configured in the database
    (:meth:`RunConfig.freshness`) read at each use.

    It stands in for :class:`common.settings.FreshnessSettings` where the freshness
    runtime reads it: ``repos``, ``repo(name)`` and ``confluence`` read the database
    each time; ``webhooks_enabled`` is true once a webhook secret is set (a push may name
    a repository added later); every other attribute is ``base``'s. When the database
    cannot be read, the sources read last are used (and the failure logged)."""

    def __init__(self, runconfig: RunConfig, base: "FreshnessSettings"):
        self.runconfig, self.base = runconfig, base
        self._last: "FreshnessSettings | None" = None
        self._lock = threading.Lock()

    def current(self) -> "FreshnessSettings":
        """The freshness group with the sources configured now."""
        try:
            now = self.runconfig.freshness(self.base)
        except SQLAlchemyError as exc:
            with self._lock:
                last = self._last
            log.warning("the configured sources cannot be read (%s); using the ones read %s", type(exc).__name__,
                        "last" if last is not None else "from the environment")
            return last if last is not None else self.base
        with self._lock:
            self._last = now
        return now

    @property
    def repos(self) -> tuple:
        """The repositories configured now."""
        return self.current().repos

    @property
    def confluence(self) -> Any:
        """The Confluence group with the spaces configured now (``None``: Confluence is off)."""
        return self.current().confluence

    def repo(self, name: str):
        """The repository ``name`` as configured now; ``BadInput`` when it is not."""
        return self.current().repo(name)

    @property
    def webhooks_enabled(self) -> bool:
        """Push webhooks are served: a GitHub or GitLab secret is set."""
        return bool(self.base.github_secret or self.base.gitlab_token)

    def check(self) -> None:
        """The environment's check (Confluence credentials)."""
        self.base.check()

    def model_copy(self, *, update: dict | None = None, deep: bool = False) -> "LiveFreshness":
        """A live configuration on ``base`` with ``update`` (e.g. another index queue)."""
        return LiveFreshness(self.runconfig, self.base.model_copy(update=update, deep=deep))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("runconfig", "base"):
            raise AttributeError(name)
        return getattr(self.base, name)
