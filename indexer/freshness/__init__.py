"""Keeping the index fresh: webhooks, the per-repo worker queue, Confluence syncs and the
scheduler that drives them.

Modules, in the order of a push's journey: :mod:`.webhooks` (verify + enqueue, HTTP 202),
:mod:`.worker` (one thread per repo, coalescing), which runs the Git source
(:mod:`indexer.sources.repository`: the mirror, the diff, changed files -> chunks + graph
rows), :mod:`.scheduler` (APScheduler: TTL and safety jobs, single-instance lock).
"""
