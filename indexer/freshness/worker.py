"""One worker thread per repo; pushes coalesce, none is lost.

:meth:`RepoWorkers.request` marks a repo *dirty* and wakes its worker. The worker clears
the flag, then runs :func:`~indexer.sources.repository.sync_repo` (which fetches the mirror and indexes
up to the branch head *at fetch time*). A push arriving during a run sets the flag again,
so exactly one more run follows, and it sees every commit pushed meanwhile: any number
of pushes during a run cost one extra run, and no push is ever dropped.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from common.settings import FreshnessSettings

from ..pipeline import IndexingPipeline
from ..sources.repository import SyncResult, run_and_record

log = logging.getLogger(__name__)


@dataclass
class _RepoSlot:
    dirty: bool = False
    running: bool = False
    runs: int = 0
    requests: int = 0
    last: SyncResult | None = None
    thread: threading.Thread | None = None
    cond: threading.Condition = field(default_factory=threading.Condition)


class RepoWorkers:
    """The per-repo queues of one process. ``ctx``: shared :class:`~indexer.pipeline.IndexingPipeline`."""

    def __init__(self, ctx: IndexingPipeline, config: FreshnessSettings):
        self.ctx = ctx
        self.config = config
        self._slots: dict[str, _RepoSlot] = {}
        self._lock = threading.Lock()
        self._stopping = False

    def _slot(self, name: str) -> _RepoSlot:
        with self._lock:
            slot = self._slots.get(name)
            if slot is None:
                slot = self._slots[name] = _RepoSlot()
            if slot.thread is None or not slot.thread.is_alive():
                slot.thread = threading.Thread(target=self._loop, args=(name, slot), daemon=True,
                                               name=f"coderag-sync-{name}")
                slot.thread.start()
            return slot

    def request(self, name: str, reason: str = "") -> None:
        """Queue a run of repo ``name`` (``BadInput`` if it is not configured); returns at once."""
        self.config.repo(name)
        slot = self._slot(name)
        with slot.cond:
            slot.dirty = True
            slot.requests += 1
            slot.cond.notify_all()
        log.info("%s: re-index queued (%s)", name, reason or "request")

    def _loop(self, name: str, slot: _RepoSlot) -> None:
        repo = self.config.repo(name)
        while True:
            with slot.cond:
                while not slot.dirty and not self._stopping:
                    slot.cond.wait()
                if self._stopping:
                    return
                slot.dirty = False
                slot.running = True
            try:
                slot.last = run_and_record(self.ctx, repo)
            finally:
                with slot.cond:
                    slot.running = False
                    slot.runs += 1
                    slot.cond.notify_all()

    def pending(self) -> int:
        """Repos with a run queued and not started yet (the webhook queue depth)."""
        with self._lock:
            slots = list(self._slots.values())
        return sum(1 for slot in slots if slot.dirty)

    def counts(self) -> dict:
        """Runs by state, in total and per repo: ``{"todo", "doing", "failed", "by_source":
        {repo: {"todo", "doing", "failed"}}}`` (``todo``: a run queued, ``doing``: running;
        a failed run is not kept here: its error is the repo's last error in the sync state)."""
        with self._lock:
            slots = dict(self._slots)
        by = {name: {"todo": int(slot.dirty), "doing": int(slot.running), "failed": 0} for name, slot in slots.items()}
        return {"todo": sum(b["todo"] for b in by.values()), "doing": sum(b["doing"] for b in by.values()),
                "failed": 0, "by_source": by}

    def stats(self, name: str) -> dict:
        """``{"runs", "requests", "running", "dirty", "last"}`` of repo ``name``."""
        slot = self._slot(name)
        with slot.cond:
            return {"runs": slot.runs, "requests": slot.requests, "running": slot.running,
                    "dirty": slot.dirty, "last": slot.last}

    def stop(self, timeout: float = 30.0) -> None:
        """Let running syncs finish, then end the threads."""
        self._stopping = True
        for slot in list(self._slots.values()):
            with slot.cond:
                slot.cond.notify_all()
        for slot in list(self._slots.values()):
            if slot.thread is not None:
                slot.thread.join(timeout)
