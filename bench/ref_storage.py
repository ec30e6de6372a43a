#!/usr/bin/env python3
"""What a named ref costs: index a repository's default head, then one or more refs
(release tags) as ref sources, and print one JSON object with the storage of each.

Usage: python bench/ref_storage.py REPO_PATH [--name NAME] [--ref TAG ...] [--pattern GLOB]
                                   [--models DIR] [--home DIR]

REPO_PATH is a clone (a work tree; its HEAD is the default head). ``--ref`` names the
refs to index (repeatable); without it, the newest tag matching ``--pattern``
(``rel_2_*``) that the head contains. Each ref goes through the function ``coderag
sync`` uses (:func:`indexer.sources.refs.index_ref`, against the base's committed
commit), so it stores chunks only for the paths that differ from the head.

Per source (the base, then each ref): ``objects`` (chunk objects in Weaviate, all
visible once the run has cleaned up), ``bytes`` = ``bytes_properties`` (the stored
properties as JSON: content, identifier and path words, metadata) + ``bytes_vectors``
(4 bytes per dimension of each object that has a vector), ``files`` with chunks, and its
call-graph rows in SQL (``code_files``, ``code_definitions``, ``code_edges``: a ref's
graph is stored whole, see docs/how-it-works.md). Per ref also: the diff between it and
the head (``diff_files``: paths that differ, ``diff_lines``: lines added plus deleted,
``git diff --numstat``), what the run embedded and reused, and ``bytes_per_diff_file``
/ ``objects_share_of_base``: the ref's cost relative to its diff and to a full copy
(a full copy of a ref near the head would be about the base's size). A ref stores whole
files (every chunk of a file that differs), so its size follows the size of the files
that differ: ``diff_file_bytes`` (their bytes at the ref; ``diff_file_bytes_share``: of
the head's ``file_bytes``) and ``base_objects_of_differing_paths`` (what the base holds
for the same paths) are the figures to compare it with; ``objects_same_in_base``: the
ref's objects whose path, lines and content the base also has (what chunk-level sharing
could save on top; not done, see docs/how-it-works.md). ``disk_delta_bytes``:
growth of the Weaviate data folder during the ref's run (approximate: LSM segments are
flushed and compacted lazily). ``search_ms_median``: the median latency of a few hybrid
searches (ranking and graph expansion included) read through the source: at a ref, its
view (the base minus its differing paths, plus its own chunks).

Runs on a private embedded Weaviate and SQLite under ``--home`` (default: a temporary
folder, removed at the end; the embedded server is stopped). Knowledge subscribers
(drift, who) are off: they store SQL rows, not chunks.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def default_ref(repo: str, pattern: str) -> str:
    """The newest tag matching ``pattern`` that HEAD contains (by tag date)."""
    tags = git(repo, "tag", "--merged", "HEAD", "--sort=-creatordate", "-l", pattern).split()
    if not tags:
        raise SystemExit(f"no tag matching {pattern!r} in {repo}'s history")
    return tags[0]


def diff_size(repo: str, a: str, b: str) -> tuple[int, int]:
    """``(files, lines added + deleted)`` between commits ``a`` and ``b`` (binary files: 0 lines)."""
    files = lines = 0
    for row in git(repo, "diff", "--numstat", "--no-renames", a, b).splitlines():
        added, deleted, _path = row.split("\t", 2)
        files += 1
        lines += (int(added) if added.isdigit() else 0) + (int(deleted) if deleted.isdigit() else 0)
    return files, lines


def storage(store, dims: int) -> tuple[dict[str, dict], dict[str, dict[str, int]], dict[str, set]]:
    """``(per source: objects, bytes of their properties (JSON) and vectors, files;
    per source: objects per path; per source: the (path, start, end, content hash) keys)``."""
    from indexer.store.schema import CHUNK_PROPERTIES

    names = [p.name for p in CHUNK_PROPERTIES]
    out: dict[str, dict] = {}
    per_path: dict[str, dict[str, int]] = {}
    keys: dict[str, set] = {}
    for obj in store.query.all_objects(names):
        p = obj.properties
        repo = p.get("repo") or ""
        row = out.setdefault(repo, {"objects": 0, "bytes_properties": 0, "bytes_vectors": 0})
        row["objects"] += 1
        row["bytes_properties"] += len(json.dumps(p, default=str).encode())
        if not p.get("vector_state"):
            row["bytes_vectors"] += 4 * dims
        paths = per_path.setdefault(repo, {})
        paths[p.get("path")] = paths.get(p.get("path"), 0) + 1
        keys.setdefault(repo, set()).add((p.get("path"), p.get("start_line"), p.get("end_line"), p.get("content_hash")))
    for name, row in out.items():
        row["bytes"] = row["bytes_properties"] + row["bytes_vectors"]
        row["files"] = len(per_path[name])
    return out, per_path, keys


def file_bytes(repo: str, commit: str, paths: set[str] | None = None) -> int:
    """Bytes of the files of ``commit`` (only ``paths`` when given)."""
    total = 0
    for row in git(repo, "ls-tree", "-r", "-l", "-z", commit).split("\0"):
        if not row:
            continue
        meta, path = row.split("\t", 1)
        size = meta.split()[3]
        if size.isdigit() and (paths is None or path in paths):
            total += int(size)
    return total


def sql_rows(sessions, repo: str) -> dict[str, int]:
    from sqlalchemy import func, select

    from indexer.graph.sql_models import CodeDefinition, CodeEdge, CodeFile

    with sessions() as s:
        return {t.__tablename__: int(s.scalar(select(func.count()).select_from(t).where(t.repo == repo)) or 0)
                for t in (CodeFile, CodeDefinition, CodeEdge)}


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo")
    ap.add_argument("--name", default=None)
    ap.add_argument("--ref", action="append", default=[], help="a tag or branch to index as a ref (repeatable)")
    ap.add_argument("--pattern", default="rel_2_*", help="without --ref: the newest matching tag in HEAD's history")
    ap.add_argument("--models", default=str(Path.home() / ".cache" / "coderag-bench-models"),
                    help="persistent cache of the ONNX export")
    ap.add_argument("--home", default=None, help="CODERAG_HOME to use (default: a temporary folder)")
    args = ap.parse_args()
    import signal

    signal.signal(signal.SIGTERM, lambda *_a: sys.exit(143))  # the clean-up below runs (server stopped)
    repo = str(Path(args.repo).resolve())
    refs = args.ref or [default_ref(repo, args.pattern)]
    tmp = None
    if args.home:
        home = Path(args.home)
        home.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.mkdtemp(prefix="coderag-refbench-")
        home = Path(tmp)
    os.environ["CODERAG_HOME"] = str(home)
    for var in ("WEAVIATE_URL", "CODERAG_DATABASE_URL", "CODERAG_REPOS"):
        os.environ.pop(var, None)
    models = Path(args.models)
    models.mkdir(parents=True, exist_ok=True)
    if not (home / "models").exists():
        (home / "models").symlink_to(models)

    from common.db import open_database
    from common.settings import Settings
    from index_bench import ensure_export
    from indexer import ChunkStore, EmbeddedWeaviate, index_repository, make_embedder
    from indexer.pipeline import IndexingPipeline
    from indexer.sources.refs import RefTarget, index_ref, ref_source_name

    settings = Settings.from_env()
    ensure_export(settings)
    embedder = make_embedder(settings)
    name = args.name or Path(repo).name
    head = git(repo, "rev-parse", "HEAD").strip()
    try:
        sessions = open_database(settings)
        with ChunkStore.open(settings) as store:
            pipeline = IndexingPipeline(settings=settings, store=store, sessions=sessions, embedder=embedder,
                                        subscribers=[])
            t = time.perf_counter()
            summary = index_repository(repo, name=name, settings=settings, store=store, sessions=sessions,
                                       pipeline=pipeline)
            base_s = time.perf_counter() - t
            dims = int(store.sources.get(name).dimensions or 384)
            base = {**storage(store, dims)[0][name], **sql_rows(sessions, name), "commit": head,
                    "file_bytes": file_bytes(repo, head), "chunks_embedded": summary.embedded,
                    "seconds": round(base_s, 1)}
            out_refs = []
            data = home / "weaviate"
            for ref in refs:
                commit = git(repo, "rev-parse", f"{ref}^{{commit}}").strip()
                files, lines = diff_size(repo, commit, head)
                before = du(data)
                t = time.perf_counter()
                res = index_ref(pipeline, repo, store.sources.get(name), RefTarget(ref, commit), against=[head])
                seconds = time.perf_counter() - t
                source = ref_source_name(name, ref)
                rows, per_path, keys = storage(store, dims)
                row = rows.get(source, {"objects": 0, "bytes_properties": 0, "bytes_vectors": 0, "bytes": 0,
                                        "files": 0})
                differs = set(store.sources.get(source).differs)
                own = keys.get(source, set())
                out_refs.append({
                    "ref": ref, "source": source, "commit": commit, "diff_files": files, "diff_lines": lines,
                    "differs": res.differs, "diff_file_bytes": file_bytes(repo, commit, differs),
                    "diff_file_bytes_share": round(file_bytes(repo, commit, differs) / base["file_bytes"], 4),
                    "base_objects_of_differing_paths": sum(n for p, n in per_path[name].items() if p in differs),
                    "objects_same_in_base": len(own & keys[name]),
                    **row, **sql_rows(sessions, source),
                    "chunks_embedded": res.run.embedded if res.run else 0,
                    "chunks_reused": res.run.reused_vectors if res.run else 0,
                    "seconds": round(seconds, 1),
                    "objects_share_of_base": round(row["objects"] / base["objects"], 4) if base["objects"] else None,
                    "bytes_share_of_base": round(row["bytes"] / base["bytes"], 4) if base["bytes"] else None,
                    "bytes_per_diff_file": round(row["bytes"] / files) if files else None,
                    "bytes_per_diff_line": round(row["bytes"] / lines, 1) if lines else None,
                    "disk_delta_bytes": du(data) - before,
                })
            # reading at a ref: the same searches through its view (base minus its differing
            # paths, plus its own chunks) and through the base alone
            from bot.retrieval.retriever import Retriever

            retriever = Retriever(store, embedder, sessions=sessions)
            base["search_ms_median"] = search_ms(retriever, [name])
            for row in out_refs:
                row["search_ms_median"] = search_ms(retriever, [row["source"]])
        print(json.dumps({"repo": name, "head": head, "model": embedder.model_name,
                          "embedding_policy": store_policy(settings), "base": base, "refs": out_refs}, indent=1))
    finally:
        EmbeddedWeaviate(home).stop()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


QUERIES = ("how does the connection pool recycle stale connections", "Session.execute",
           "where is the dialect's isolation level set", "create_engine")


def search_ms(retriever, repos: list[str], rounds: int = 3) -> float:
    """Median milliseconds of :data:`QUERIES` searched in ``repos`` (after one warm-up round)."""
    import statistics

    times = []
    for n in range(rounds + 1):
        for q in QUERIES:
            t = time.perf_counter()
            retriever.search(q, top_k=10, repos=repos)
            if n:
                times.append((time.perf_counter() - t) * 1000)
    return round(statistics.median(times), 1)


def store_policy(settings) -> str:
    from indexer.embedding_policy import named

    return named(settings.embedding_policy).name


if __name__ == "__main__":
    main()
