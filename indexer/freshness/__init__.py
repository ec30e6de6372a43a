"""Keeping the index fresh: webhooks, mirror clones, incremental re-indexing, the
per-repo worker queue, Confluence syncs and the scheduler that drives them.

Modules, in the order of a push's journey: :mod:`.config` (which repos/spaces),
:mod:`.webhooks` (verify + enqueue, HTTP 202), :mod:`.worker` (one thread per repo,
coalescing), :mod:`.mirror` (``git clone --mirror`` + fetch + diff),
:mod:`.incremental` (changed files -> chunks + graph rows), :mod:`.state` (last indexed
SHA, errors), :mod:`.scheduler` (APScheduler: TTL and safety jobs, single-instance lock).
"""
