"""The run protocol on the real server, step by step: an incremental run killed between
its commit and its clean-up hides the replaced paths' old copies; an index written before
versioning stays visible and is converted by its first run."""
from __future__ import annotations

from weaviate.classes.query import Filter

from indexer.models import SourceRecord

VEC = [1.0, 0.0, 0.0, 0.0]
# A name of this module's own: the session's store and this process's lock fences
# (indexer.store.repo_lock) are shared with every other test, and "r" is a common name.
REPO = "versions-protocol"


def _row(path: str, line: int, text: str, commit: str) -> tuple[dict, list[float]]:
    return ({"repo": REPO, "path": path, "start_line": line, "end_line": line, "content_hash": f"{path}:{text}",
             "content": text, "commit": commit, "symbol": text, "kind": "function"},
            [1.0, 0.1 * line, 0.0, 0.05 * len(text)])


def _visible(store) -> set[tuple[str, str]]:
    flt = store.query.visible_filter([REPO])
    objs = store._cols.chunks.query.fetch_objects(filters=flt, limit=100).objects if flt is not None else []
    return {(o.properties["path"], o.properties["content"]) for o in objs}


def test_incremental_commit_hides_replaced_paths_until_cleanup(store):
    run = store.runs.begin(REPO, "full")
    store.data.write_chunks([_row("a.py", 1, "alpha one", "c1"), _row("b.py", 1, "beta one", "c1"),
                             _row("c.py", 1, "gamma one", "c1")], run=run)
    assert _visible(store) == set()  # written, not committed: invisible
    store.runs.commit(run, SourceRecord(name=REPO, kind="git", commit="c1", model="m", files=3))
    store.runs.cleanup(run)
    v1 = _visible(store)
    assert v1 == {("a.py", "alpha one"), ("b.py", "beta one"), ("c.py", "gamma one")}

    inc = store.runs.begin(REPO, "incremental")  # a push: a.py changed, c.py deleted
    store.data.write_chunks([_row("a.py", 1, "alpha two", "c2")], run=inc)
    assert _visible(store) == v1
    inc.replace_paths({"a.py", "c.py"})
    rec = store.runs.commit(inc, SourceRecord(name=REPO, kind="git", commit="c2", model="m"), count_files=True)
    # "killed" here, before the clean-up: the old copies exist but are not visible
    total = store.query.count_where(Filter.by_property("repo").equal(REPO))
    seen = _visible(store)
    print(f"\n[commit, no clean-up] objects {total}, visible {sorted(seen)}, record {rec.chunks} chunks "
          f"{rec.files} files")
    assert total == 4 and seen == {("a.py", "alpha two"), ("b.py", "beta one")}
    assert (rec.chunks, rec.files) == (2, 2) and store.query.count(REPO) == 2
    hits = store.query.hybrid("alpha gamma", VEC, alpha=0.0, limit=10, repos=[REPO])
    assert sorted(h.content for h in hits) == ["alpha two"]

    nxt = store.runs.begin(REPO, "incremental")  # the next run finishes the clean-up first
    assert store.query.count_where(Filter.by_property("repo").equal(REPO)) == 2
    assert nxt.gen == inc.gen + 1 and store.sources.get(REPO).replaced == []


def test_index_from_before_versioning_stays_visible_and_converts(store):
    store.data.write_chunks([_row("a.py", 1, "legacy alpha", "c0"), _row("b.py", 1, "legacy beta", "c0")])  # no run
    store.sources.save(SourceRecord(name=REPO, kind="git", commit="c0", model="m", chunks=2))
    assert _visible(store) == {("a.py", "legacy alpha"), ("b.py", "legacy beta")}

    crashed = store.runs.begin(REPO, "full")  # a first run that dies before its commit
    store.data.write_chunks([_row("a.py", 1, "new alpha", "c1")], run=crashed)
    assert _visible(store) == {("a.py", "legacy alpha"), ("b.py", "legacy beta")}

    inc = store.runs.begin(REPO, "incremental")  # next: a push changing a.py only
    assert store.query.count_where(Filter.by_property("repo").equal(REPO)) == 2  # the crashed run's object is gone
    store.data.write_chunks([_row("a.py", 1, "newer alpha", "c2")], run=inc)
    inc.replace_paths({"a.py"})
    store.runs.commit(inc, SourceRecord(name=REPO, kind="git", commit="c2", model="m"), count_files=True)
    store.runs.cleanup(inc)
    assert _visible(store) == {("a.py", "newer alpha"), ("b.py", "legacy beta")}  # legacy b.py carried

    full = store.runs.begin(REPO, "full")
    store.data.write_chunks([_row("a.py", 1, "newer alpha", "c3"), _row("b.py", 1, "beta three", "c3")], run=full)
    store.runs.commit(full, SourceRecord(name=REPO, kind="git", commit="c3", model="m", files=2))
    store.runs.cleanup(full)
    assert _visible(store) == {("a.py", "newer alpha"), ("b.py", "beta three")}
    assert store.query.count_where(Filter.by_property("repo").equal(REPO)) == 2  # legacy objects deleted
