"""Shared by tests/faults/ and bench/chaos.py: a Weaviate server that can be SIGKILLed and
restarted on its data and ports, generated repositories whose every chunk names its
version, and the "nothing lost, nothing half-visible" checks."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from .gitrepo import commit_files, make_git_repo


class KillableWeaviate:
    """A real weaviate-server child process on fixed loopback ports and one data folder."""

    def __init__(self, binary: str, root: Path):
        from indexer.store.weaviate_server import ServerPorts

        self.binary, self.root = binary, Path(root)
        self.ports = ServerPorts.fresh()
        self.proc = None
        self.kills = 0

    def start(self) -> "KillableWeaviate":
        from indexer.store.weaviate_server import start_server

        self.proc, self.info = start_server(self.binary, self.root / "data", self.root / "server.log",
                                            detach=False, ports=self.ports)
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.ports.http}"

    def env(self) -> dict[str, str]:
        return {"WEAVIATE_URL": self.url, "WEAVIATE_GRPC_PORT": str(self.ports.grpc)}

    def kill(self) -> None:
        """SIGKILL (no shutdown, no flush) and reap."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
            self.kills += 1

    def kill_after(self, seconds: float) -> threading.Thread:
        """SIGKILL from a timer thread ``seconds`` from now (lands inside a request)."""
        t = threading.Thread(target=lambda: (time.sleep(seconds), self.kill()), daemon=True)
        t.start()
        return t

    def restart(self) -> float:
        """Start again on the same data and ports; returns the seconds it took to be ready."""
        self.kill()
        t0 = time.perf_counter()
        self.start()
        return time.perf_counter() - t0

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def marker(version: int) -> str:
    """A keyword that exists in exactly one version: letters only (BM25 word tokenisation
    splits at digits and underscores), e.g. 1 -> ``vmarkb``, 12 -> ``vmarkbc``."""
    return "vmark" + "".join(chr(97 + int(d)) for d in str(version))


def version_files(n_files: int, funcs: int, version: int, skip: tuple[int, ...] = ()) -> dict[str, str]:
    """``n_files`` Python files of ``funcs`` functions; every function names
    :func:`marker` of ``version``."""
    files = {}
    word = marker(version)
    for f in range(n_files):
        if f in skip:
            continue
        body = [f'"""Module {f} of the generated repository."""\n']
        for g in range(funcs):
            body.append(f"\n\ndef handler_{f}_{g}(request, limit={g + 1}):\n"
                        f'    """Handle request kind {g} for module {f} ({word})."""\n'
                        f"    total = request.count * {f + 1} + {g}\n"
                        f"    label = \"{word} module {f} handler {g}\"\n"
                        f"    return total if total < limit * {version + 1} else label\n")
        files[f"pkg/mod_{f:04d}.py"] = "".join(body)
    return files


def make_versioned_repo(tmp: Path, n_files: int, funcs: int, name: str = "gen") -> Path:
    """A repo at version 1 (see :func:`version_files`)."""
    return make_git_repo(tmp, version_files(n_files, funcs, 1), name=name)


def commit_version(repo: Path, n_files: int, funcs: int, version: int) -> str:
    """Rewrite every file for ``version``, drop module 0, add one new module; returns the sha."""
    files = version_files(n_files, funcs, version, skip=(0,))
    files[f"pkg/extra_v{version}.py"] = f'def extra_v{version}():\n    return "{marker(version)} extra"\n'
    existing = [p.relative_to(repo).as_posix() for p in (repo / "pkg").glob("*.py")]
    gone = tuple(p for p in existing if p not in files)
    return commit_files(repo, files, f"version {version}", delete=gone)


def inspect_repo(store, repo: str, markers: dict[str, str]) -> dict:
    """What a reader of ``repo`` sees now: the committed commit, the visible objects and
    their commits, keyword hits per marker (``{label: keyword}``), visible objects missing
    from the vector index, a vector search with one visible object's own vector, and the
    objects of the repo in Weaviate in total (visible or not)."""
    from weaviate.classes.query import Filter

    by_repo = Filter.by_property("repo").equal(repo)
    rec = store.sources.get(repo)
    # Before versioning (commit b5edb4a) readers saw every object of the repo.
    flt = store.query.visible_filter([repo]) if hasattr(store, "query") else by_repo
    objs = store._cols.chunks.query.fetch_objects(filters=flt, limit=10000, return_properties=["commit", "path"]).objects \
        if flt is not None else []
    total = store._cols.chunks.aggregate.over_all(filters=by_repo, total_count=True).total_count or 0
    out = {"commit": rec.commit if rec else None, "record_chunks": int(rec.chunks if rec else 0),
           "visible": len(objs), "visible_commits": sorted({o.properties["commit"] for o in objs}),
           "total_objects": int(total)}
    for label, word in markers.items():
        hits = store.query.hybrid(word, [1.0] + [0.0] * 383, alpha=0.0, limit=50, repos=[repo])
        out[f"keyword_{label}"] = len(hits)
        out[f"keyword_{label}_commits"] = sorted({h.commit for h in hits})
    try:
        from indexer.store.versions import missing_vectors
    except ImportError:  # commit b5edb4a: same probe, inline
        def missing_vectors(store, ids, dims):
            ids = [str(i) for i in ids]
            found = set()
            for i in range(0, len(ids), 1000):
                res = store._cols.chunks.query.near_vector(near_vector=[1.0] + [0.0] * (dims - 1),
                                                     filters=Filter.by_id().contains_any(ids[i:i + 1000]),
                                                     limit=1000, return_properties=[])
                found |= {str(o.uuid) for o in res.objects}
            return [u for u in ids if u not in found]
    out["missing_vectors"] = len(missing_vectors(store, [str(o.uuid) for o in objs], 384))
    if objs:
        probe = store._cols.chunks.query.fetch_object_by_id(objs[len(objs) // 2].uuid, include_vector=True)
        from indexer.store.objects import default_vector as _default_vector

        vec = _default_vector(probe)
        hits = store.query.hybrid("x", vec, alpha=1.0, limit=3, repos=[repo]) if vec else []
        out["vector_self_hit"] = bool(hits) and hits[0].uuid == str(probe.uuid)
    else:
        out["vector_self_hit"] = False
    return out


def half_visible(seen: dict) -> bool:
    """True when a reader sees anything but exactly one complete committed version."""
    return (len(seen["visible_commits"]) > 1
            or (seen["visible_commits"] and seen["visible_commits"] != [seen["commit"]])
            or seen["visible"] != seen["record_chunks"])


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def fill_disk(path) -> None:
    """Write a filler file into the folder ``path`` until its device says ENOSPC."""
    with open(Path(path) / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
