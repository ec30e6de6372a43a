"""The freshness objects of one process (config, index context, repo workers,
scheduler), built once and shared by the webhook routes, scheduled jobs and the CLI.

Scheduled jobs are stored in SQL by APScheduler as ``module:function`` references plus
arguments, so they cannot hold objects: they find this process's runtime through
:func:`~.jobs.current` (set by :meth:`FreshnessRuntime.make_current`).
"""
from __future__ import annotations

import logging

from common.settings import FreshnessSettings, Settings
from common.db import open_database
from ..embeddings import make_embedder
from ..store.weaviate_store import ChunkStore
from ..knowledge import subscribers
from ..pipeline import IndexingPipeline
from .jobs import current, forget_current, set_current  # noqa: F401  (current: re-exported)
from .worker import RepoWorkers

log = logging.getLogger(__name__)



class FreshnessRuntime:
    """``config`` (the freshness group read at start-up) + ``ctx`` (the
    :class:`~indexer.pipeline.IndexingPipeline`) + ``workers`` (:class:`RepoWorkers`);
    ``scheduler`` once :meth:`start_scheduler` ran. Raises ``BadInput`` when Confluence
    is configured without credentials."""

    def __init__(self, config: FreshnessSettings, ctx: IndexingPipeline, *, owns_store: bool = False):
        config.check()
        self.config = config
        self.ctx = ctx
        self.queue = None  # the procrastinate app (CODERAG_INDEX_QUEUE=procrastinate), opened here
        if config.index_queue == "procrastinate":
            from .queue_extra import require_queue_extra

            require_queue_extra()  # one line naming the pip extra, not an import traceback
            from .queue import QueuedRepoWorkers, check_reachable, ensure_schema, make_app

            check_reachable(ctx.settings.database_url or "")
            self.queue = make_app(ctx.settings.database_url or "")
            self.queue.open()
            ensure_schema(self.queue)
            self.workers = QueuedRepoWorkers(self.queue, config)
        else:
            self.workers = RepoWorkers(ctx, config)
        self.scheduler = None
        self._owns_store = owns_store

    @classmethod
    def build(cls, config: FreshnessSettings, settings: Settings, *,
              sessions=None, embedder=None, store: ChunkStore | None = None) -> "FreshnessRuntime":
        """The runtime of the repos and spaces in ``config`` over the index ``settings``
        names (both read once by the caller at start-up); opens what is not given: the
        database, Weaviate and embedder."""
        owns = store is None
        ctx = IndexingPipeline(settings=settings, store=store or ChunkStore.open(settings),
                           sessions=sessions or open_database(settings),
                           embedder=embedder or make_embedder(settings), subscribers=subscribers())
        return cls(config, ctx, owns_store=owns)

    def make_current(self) -> None:
        """Make this the process's runtime (what scheduled jobs find through :func:`current`)."""
        set_current(self)

    def sync_confluence(self, key: str, *, reconcile: bool | None = None, here: bool = False):
        """Run one Confluence sync of space ``key`` now (see :mod:`indexer.confluence.sync`);
        with the index queue (and not ``here``: a worker running the job), queue it instead
        and return ``None``."""
        from ..confluence.sync import run_and_record_space

        if self.config.confluence is None:
            from common.errors import BadInput

            raise BadInput("Confluence is not configured (CODERAG_CONFLUENCE_URL)")
        space = self.config.confluence.space(key)
        if self.queue is not None and not here:
            from .queue import enqueue_space

            enqueue_space(self.queue, space.key, reconcile=reconcile)
            return None
        return run_and_record_space(self.ctx, self.config.confluence, space, reconcile=reconcile)

    def start_scheduler(self, extra_jobs=(), **kwargs):
        """Start the single scheduler with this runtime's jobs (see :mod:`.scheduler`),
        plus ``extra_jobs``: callbacks ``(FreshnessScheduler) -> None`` that add their own
        (e.g. the bot's query-log retention). Raises ``SchedulerAlreadyRunning`` when
        another process holds the lock."""
        from .scheduler import FreshnessScheduler

        set_current(self)
        self.scheduler = FreshnessScheduler.for_runtime(self, **kwargs)
        for setup in extra_jobs:
            self.scheduler.on_start(setup)
        self.scheduler.start()
        return self.scheduler

    def stop(self) -> None:
        """Stop the scheduler and the workers; close the Weaviate connection if opened here."""
        if self.scheduler is not None:
            self.scheduler.shutdown()
            self.scheduler = None
        self.workers.stop()
        if self.queue is not None:
            self.queue.close()
            self.queue = None
        if self._owns_store:
            self.ctx.store.close()
        forget_current(self)
