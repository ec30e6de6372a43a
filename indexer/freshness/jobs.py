"""Functions APScheduler runs (stored by ``module:function`` reference, string args).

Each finds the process's :class:`~.runtime.FreshnessRuntime` through
:func:`~.runtime.current`; without one (a job fired in a process that does not run
freshness) it logs and returns.
"""
from __future__ import annotations

import logging

from .runtime import current

log = logging.getLogger(__name__)


def refresh_repo(name: str) -> None:
    """Safety re-fetch of repo ``name`` (missed webhooks): queue a run; a no-op run costs
    one ``git fetch`` when nothing changed."""
    rt = current()
    if rt is None:
        log.warning("refresh_repo(%s): no freshness runtime in this process", name)
        return
    rt.workers.request(name, "scheduled safety re-fetch")


def sync_space(key: str) -> None:
    """TTL job of Confluence space ``key``: incremental sync (reconciles when it is due)."""
    rt = current()
    if rt is None:
        log.warning("sync_space(%s): no freshness runtime in this process", key)
        return
    rt.sync_confluence(key)
