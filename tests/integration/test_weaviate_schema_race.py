"""Several processes opening the index at once against a fresh Weaviate (three ``coderag
worker`` started together): each sees the collections missing and creates them, and all
but the first were told "class already exists" and exited 3. Creating the collections is
idempotent under concurrency: "already exists" from a concurrent creator is success."""
from __future__ import annotations

import threading

from common.settings import Settings
from indexer import ChunkStore
from indexer.store import schema

OPENERS = 6
ROUNDS = 4


def test_stores_opened_at_once_on_a_fresh_weaviate_all_open(store):
    settings = Settings.from_env()
    for _ in range(ROUNDS):  # the race is a window of milliseconds: a few fresh starts
        store._cols.client.collections.delete([schema.CHUNK_COLLECTION, schema.SOURCE_COLLECTION])
        barrier = threading.Barrier(OPENERS)
        opened, failed = [], []

        def open_one():
            barrier.wait()
            try:
                opened.append(ChunkStore.open(settings))
            except Exception as exc:  # noqa: BLE001 - collected: the assertion says which
                failed.append(f"{type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=open_one) for _ in range(OPENERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        try:
            assert not failed and len(opened) == OPENERS, failed
            # every store reads the same, complete collections
            for s in opened:
                names = {p.name for p in s._cols.chunks.config.get().properties}
                assert {p.name for p in schema.CHUNK_PROPERTIES} <= names
                assert s._cols.sources.aggregate.over_all(total_count=True).total_count == 0
        finally:
            for s in opened:
                s.close()
