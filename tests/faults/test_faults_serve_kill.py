"""SIGKILL of `coderag serve` while a push webhook's re-index is writing: the previous
version stays whole, nothing of the new one is visible, and the next push repairs."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx

from helpers.faults import commit_version, half_visible, inspect_repo, make_versioned_repo, marker
from helpers.freshness import post_github, push_payload

SECRET = "fault-webhook-secret"
N_FILES, FUNCS = 10, 3


def _serve(env: dict, port: int, log) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=log, text=True)
    deadline = time.time() + 300
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        assert proc.poll() is None and time.time() < deadline, f"serve did not start: {_tail(log)}"
        time.sleep(0.3)


def _tail(log) -> str:
    log.flush()
    return open(log.name, encoding="utf-8", errors="replace").read()[-2000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sigkill_serve_during_webhook_reindex(settings_env, store, local_embedder, tmp_path):
    from common.db import open_database
    from common.settings import Settings
    from indexer import index_repository

    upstream = make_versioned_repo(tmp_path, N_FILES, FUNCS, name="gen")
    settings = Settings.from_env()
    sessions = open_database(settings)
    first = index_repository(upstream, name="gen", settings=settings, store=store, embedder=local_embedder,
                             sessions=sessions)
    c2 = commit_version(upstream, N_FILES, FUNCS, 2)
    markers = {"v1": marker(1), "v2": marker(2)}

    env = {k: v for k, v in settings_env.items() if not k.startswith("SLACK_")}
    env.update(CODERAG_REPOS=json.dumps([{"name": "gen", "url": str(upstream), "branch": "main"}]),
               CODERAG_GITHUB_WEBHOOK_SECRET=SECRET, CODERAG_SCHEDULER="off")  # only the webhook re-indexes
    log = open(tmp_path / "serve.log", "w", encoding="utf-8")  # noqa: SIM115 - closed at the end
    flag = tmp_path / "at-fault-point"
    port = _free_port()
    proc = _serve(dict(env, CODERAG_FAULT_AT="write_batch:1", CODERAG_FAULT_FILE=str(flag)), port, log)
    try:
        assert post_github(f"http://127.0.0.1:{port}", SECRET, push_payload("gen")).status_code in (200, 202)
        deadline = time.time() + 120
        while not flag.exists():
            assert proc.poll() is None and time.time() < deadline, f"no fault point reached: {_tail(log)}"
            time.sleep(0.2)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    after = inspect_repo(store, "gen", markers)
    print(f"\n[serve killed at {flag.read_text().strip()}] reader sees: {after}")
    assert not half_visible(after) and after["commit"] == first.commit
    assert after["visible"] == first.chunks and after["keyword_v2"] == 0 and after["keyword_v1"] > 0
    assert after["missing_vectors"] == 0 and after["vector_self_hit"]
    assert after["total_objects"] > after["visible"]  # the killed run's objects exist, unseen

    # A restarted serve and the next push repair it (the killed holder's index lock
    # expires after its TTL, then the run goes through).
    port = _free_port()
    proc = _serve(env, port, log)
    try:
        assert post_github(f"http://127.0.0.1:{port}", SECRET, push_payload("gen")).status_code in (200, 202)
        deadline = time.time() + 300
        while getattr(store.sources.get("gen"), "commit", None) != c2:
            assert proc.poll() is None and time.time() < deadline, f"the next push did not index: {_tail(log)}"
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        log.close()
    final = inspect_repo(store, "gen", markers)
    print(f"[serve restarted, next push] reader sees: {final}")
    assert not half_visible(final) and final["keyword_v1"] == 0 and final["keyword_v2"] > 0
    assert final["missing_vectors"] == 0 and final["vector_self_hit"]
    assert final["total_objects"] == final["visible"]  # the killed run's objects are gone
