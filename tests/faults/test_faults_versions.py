"""The run protocol on the real server, step by step: an incremental run killed between
its commit and its clean-up hides the replaced paths' old copies; an index written before
versioning stays visible and is converted by its first run."""
from __future__ import annotations

from weaviate.classes.query import Filter

VEC = [1.0, 0.0, 0.0, 0.0]


def _row(path: str, line: int, text: str, commit: str) -> tuple[dict, list[float]]:
    return ({"repo": "r", "path": path, "start_line": line, "end_line": line, "content_hash": f"{path}:{text}",
             "content": text, "commit": commit, "symbol": text, "kind": "function"},
            [1.0, 0.1 * line, 0.0, 0.05 * len(text)])


def _visible(store) -> set[tuple[str, str]]:
    flt = store.visible_filter(["r"])
    objs = store.chunks.query.fetch_objects(filters=flt, limit=100).objects if flt is not None else []
    return {(o.properties["path"], o.properties["content"]) for o in objs}


def test_incremental_commit_hides_replaced_paths_until_cleanup(store):
    run = store.begin_run("r", "full")
    store.write_chunks([_row("a.py", 1, "alpha one", "c1"), _row("b.py", 1, "beta one", "c1"),
                        _row("c.py", 1, "gamma one", "c1")], run=run)
    assert _visible(store) == set()  # written, not committed: invisible
    store.commit_run(run, {"name": "r", "kind": "git", "commit": "c1", "model": "m", "files": 3})
    store.cleanup_run(run)
    v1 = _visible(store)
    assert v1 == {("a.py", "alpha one"), ("b.py", "beta one"), ("c.py", "gamma one")}

    inc = store.begin_run("r", "incremental")  # a push: a.py changed, c.py deleted
    store.write_chunks([_row("a.py", 1, "alpha two", "c2")], run=inc)
    assert _visible(store) == v1
    inc.replace_paths({"a.py", "c.py"})
    rec = store.commit_run(inc, {"name": "r", "kind": "git", "commit": "c2", "model": "m", "files": None})
    # "killed" here, before the clean-up: the old copies exist but are not visible
    total = store.count_where(Filter.by_property("repo").equal("r"))
    seen = _visible(store)
    print(f"\n[commit, no clean-up] objects {total}, visible {sorted(seen)}, record {rec['chunks']} chunks "
          f"{rec['files']} files")
    assert total == 4 and seen == {("a.py", "alpha two"), ("b.py", "beta one")}
    assert (rec["chunks"], rec["files"]) == (2, 2) and store.count("r") == 2
    hits = store.hybrid_search("alpha gamma", VEC, alpha=0.0, limit=10, repos=["r"])
    assert sorted(h.content for h in hits) == ["alpha two"]

    nxt = store.begin_run("r", "incremental")  # the next run finishes the clean-up first
    assert store.count_where(Filter.by_property("repo").equal("r")) == 2
    assert nxt.gen == inc.gen + 1 and store.source_record("r")["replaced"] == []


def test_index_from_before_versioning_stays_visible_and_converts(store):
    store.write_chunks([_row("a.py", 1, "legacy alpha", "c0"), _row("b.py", 1, "legacy beta", "c0")])  # no run
    store.save_source({"name": "r", "kind": "git", "commit": "c0", "model": "m", "chunks": 2})
    assert _visible(store) == {("a.py", "legacy alpha"), ("b.py", "legacy beta")}

    crashed = store.begin_run("r", "full")  # a first run that dies before its commit
    store.write_chunks([_row("a.py", 1, "new alpha", "c1")], run=crashed)
    assert _visible(store) == {("a.py", "legacy alpha"), ("b.py", "legacy beta")}

    inc = store.begin_run("r", "incremental")  # next: a push changing a.py only
    assert store.count_where(Filter.by_property("repo").equal("r")) == 2  # the crashed run's object is gone
    store.write_chunks([_row("a.py", 1, "newer alpha", "c2")], run=inc)
    inc.replace_paths({"a.py"})
    store.commit_run(inc, {"name": "r", "kind": "git", "commit": "c2", "model": "m", "files": None})
    store.cleanup_run(inc)
    assert _visible(store) == {("a.py", "newer alpha"), ("b.py", "legacy beta")}  # legacy b.py carried

    full = store.begin_run("r", "full")
    store.write_chunks([_row("a.py", 1, "newer alpha", "c3"), _row("b.py", 1, "beta three", "c3")], run=full)
    store.commit_run(full, {"name": "r", "kind": "git", "commit": "c3", "model": "m", "files": 2})
    store.cleanup_run(full)
    assert _visible(store) == {("a.py", "newer alpha"), ("b.py", "beta three")}
    assert store.count_where(Filter.by_property("repo").equal("r")) == 2  # legacy objects deleted
