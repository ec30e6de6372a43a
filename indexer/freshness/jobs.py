"""Functions APScheduler runs (stored by ``module:function`` reference, string args).

Each finds the process's :class:`~.runtime.FreshnessRuntime` through :func:`current`
(kept here, not in the runtime module, so the scheduler can name these functions without
importing the runtime); without one (a job fired in a process that does not run
freshness) it logs and returns.
"""
from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)

_current = None  # this process's FreshnessRuntime
_current_lock = threading.Lock()


def set_current(runtime) -> None:
    """Make ``runtime`` (a :class:`~.runtime.FreshnessRuntime`, or ``None``) this process's."""
    global _current
    with _current_lock:
        _current = runtime


def forget_current(runtime) -> None:
    """Clear this process's runtime if it is ``runtime`` (it is stopping)."""
    global _current
    with _current_lock:
        if _current is runtime:
            _current = None


def current():
    """This process's :class:`~.runtime.FreshnessRuntime` (``None`` when freshness is not
    running here)."""
    return _current


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


def recheck_sources() -> None:
    """Give the sources configured since the scheduler started (on the admin page) their
    jobs, and take those of removed sources away
    (:meth:`.scheduler.FreshnessScheduler.recheck`)."""
    rt = current()
    if rt is None or rt.scheduler is None:
        log.warning("recheck_sources: no freshness scheduler in this process")
        return
    rt.scheduler.recheck(rt)
