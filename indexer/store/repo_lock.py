"""One index run per repository at a time, across threads, processes and hosts.

Chunk ids are deterministic (:func:`indexer.store.weaviate_store.chunk_uuid`), and a run
deletes the repo's chunks that carry another run id once it has written its own. Two
overlapping runs of one repo (``coderag sync`` while ``serve`` handles a push, two
``serve`` replicas taking webhooks) would therefore delete each other's freshly written
objects. :func:`repo_index_lock` serialises them with a heartbeat row in
``scheduler_locks`` named ``index:<repo>`` (the same compare-and-swap lock the scheduler
uses, so it holds across hosts sharing the database); a crashed holder's lock is taken
over after its TTL.
"""
from __future__ import annotations

import hashlib
import logging
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from sqlalchemy.orm import sessionmaker

from common.errors import CoderagError, ExitCode
from .sql_lock import SchedulerAlreadyRunning, SchedulerLock

log = logging.getLogger(__name__)

LOCK_TTL_S = 60.0  # heartbeat every TTL/3; a holder silent this long counts as crashed
DEFAULT_WAIT_S = 4 * 3600.0  # a cold full index of a 600k-line repo takes about an hour


#: Sources whose index lock this process held and lost (the heartbeat found another owner):
#: their run stops at its next write, verification or commit (:func:`check_fence`).
_LOST: set[str] = set()
_LOST_GUARD = threading.Lock()


def check_fence(source: str) -> None:
    """Raise :class:`StaleRun` when this process's run of ``source`` lost its index lock
    (called by the store before each write batch, the verification and the commit)."""
    with _LOST_GUARD:
        lost = source in _LOST
    if lost:
        raise StaleRun(f"{source}: this index run lost its lock to another run while it was stalled; it stops "
                       "here and commits nothing (the other run's version stays)")


class StaleRun(CoderagError):
    """A run lost its repository to another run while it was stalled (its lock was taken
    over and the other run committed): its work is dropped, the newer version stays."""

    exit_code = ExitCode.STALE_RUN


class RepoIndexBusy(CoderagError):
    """Another run kept the repo's index lock longer than the caller would wait."""

    exit_code = ExitCode.REPO_INDEX_BUSY


def lock_name(repo: str) -> str:
    """``index:<repo>``, hashed when it would not fit the 100-character key."""
    name = f"index:{repo}"
    return name if len(name) <= 100 else "index:" + hashlib.sha1(repo.encode()).hexdigest()


@contextmanager
def repo_index_lock(sessions: sessionmaker, repo: str, *, ttl_s: float, wait_s: float = DEFAULT_WAIT_S,
                    on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold ``repo``'s index lock for the ``with`` body, waiting up to ``wait_s`` seconds
    (polling once a second) while another run holds it; ``on_wait(reason)`` is called
    once when the caller has to wait. A daemon thread refreshes the heartbeat every
    ``ttl_s / 3`` seconds (``ttl_s``: ``CODERAG_INDEX_LOCK_TTL_SECONDS``,
    ``index_lock_ttl`` of the caller's settings). Raises :class:`RepoIndexBusy` when the
    wait runs out.

    A holder that stalls longer than the TTL loses the lock to the next run; it then
    cannot commit either: :func:`indexer.store.versions.commit_run` refuses a run whose
    source was committed by another run meanwhile (:class:`StaleRun`)."""
    lock = SchedulerLock(sessions, name=lock_name(repo), ttl=ttl_s)
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            lock.acquire()
            break
        except SchedulerAlreadyRunning as exc:
            if time.monotonic() >= deadline:
                raise RepoIndexBusy(f"another index run of {repo!r} is still going after {wait_s:.0f}s "
                                    f"({exc})") from None
            if not told:
                told = True
                reason = f"waiting for another index run of {repo!r} to finish"
                log.warning(reason)
                if on_wait is not None:
                    on_wait(reason)
            time.sleep(1.0)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(ttl_s / 3):
            try:
                if not lock.heartbeat():
                    log.error("index lock of %s was taken over (this run stalled > %.0fs)", repo, ttl_s)
                    with _LOST_GUARD:
                        _LOST.add(repo)
                    return
            except Exception as exc:  # noqa: BLE001 - a database blip ("database is locked") must not kill
                # the run nor print a traceback on the user's terminal: one line, and the next beat retries
                log.warning("index lock heartbeat of %s failed, retrying in %.0fs (%s)", repo, ttl_s / 3,
                            (str(exc).splitlines() or [type(exc).__name__])[0][:200])

    with _LOST_GUARD:
        _LOST.discard(repo)  # a new hold: the fence of an earlier lost run no longer applies
    thread = threading.Thread(target=beat, daemon=True, name=f"coderag-index-lock-{repo}")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        try:
            lock.release()
        except Exception:  # noqa: BLE001 - the TTL frees it anyway
            log.exception("could not release the index lock of %s", repo)
