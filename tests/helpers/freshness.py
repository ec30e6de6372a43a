"""Shared pieces of the freshness tests: a counting embedder wrapper, signed webhook
posts, and a runtime on the session Weaviate with a temp SQLite database."""
from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from .gitrepo import make_git_repo


class CountingEmbedder:
    """Wraps a real embedder; counts ``embed_documents`` texts (``documents``) and calls.
    ``gate`` (a ``threading.Event``), when set up with :meth:`block`, holds every call
    until released: tests use it to push while a run is in progress."""

    def __init__(self, inner):
        self.inner = inner
        self.model_name = inner.model_name
        self.dimensions = inner.dimensions
        self.documents = 0
        self.calls = 0
        self.entered = threading.Event()
        self._gate: threading.Event | None = None

    def block(self) -> threading.Event:
        self._gate = threading.Event()
        self.entered.clear()
        return self._gate

    def release(self) -> None:
        gate, self._gate = self._gate, None
        if gate is not None:
            gate.set()

    def embed_documents(self, texts):
        self.calls += 1
        self.documents += len(texts)
        self.entered.set()
        if self._gate is not None:
            self._gate.wait(60)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def push_payload(name: str, branch: str = "main", after: str = "0" * 40) -> dict:
    return {"ref": f"refs/heads/{branch}", "after": after, "before": "0" * 40,
            "repository": {"name": name, "full_name": f"acme/{name}", "clone_url": f"https://example.invalid/acme/{name}.git"}}


def post_github(url: str, secret: str | None, payload: dict, event: str = "push",
                signature: str | None = None) -> httpx.Response:
    """POST ``payload`` to ``url``/webhooks/github signed with ``secret`` (or ``signature`` as given)."""
    from indexer.freshness.webhooks import github_signature

    body = json.dumps(payload).encode()
    headers = {"X-GitHub-Event": event, "Content-Type": "application/json"}
    sig = signature if signature is not None else (github_signature(secret, body) if secret else None)
    if sig:
        headers["X-Hub-Signature-256"] = sig
    return httpx.post(f"{url}/webhooks/github", content=body, headers=headers, timeout=30)


def wait_idle(workers, name: str, timeout: float = 60.0) -> bool:
    """Block until repo ``name`` has nothing queued or running on ``workers``
    (``indexer.freshness.worker.RepoWorkers``); False on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        st = workers.stats(name)
        if not st["dirty"] and not st["running"]:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


# ---------------------------------------------------------------- the "shop" upstream behind a webhook
SECRET = "s3cret-webhook-key"

PRICING = '''"""Prices."""


def compute_total(items):
    """Sum of the item prices."""
    return sum(item["price"] for item in items)


def apply_discount(total, percent):
    """Total after a percentage discount."""
    return total * (100 - percent) / 100
'''

CART = '''from shop.pricing import compute_total


def checkout(cart):
    """Charge the cart."""
    return compute_total(cart["items"])
'''


@pytest.fixture
def fresh(settings_env, store, local_embedder, tmp_path, monkeypatch):
    """An upstream repo 'shop', a freshness runtime on it and `coderag serve`'s ASGI app
    (built through bot.server.ROUTE_PROVIDERS) in a background uvicorn."""
    from bot.server import ServerContext, build_asgi
    from helpers.http_server import BackgroundServer
    from common.db import open_database
    from common.settings import Settings, load
    from indexer.freshness.runtime import FreshnessRuntime

    upstream = make_git_repo(tmp_path, {"shop/__init__.py": "", "shop/pricing.py": PRICING,
                                        "shop/cart.py": CART}, name="shop-upstream")
    monkeypatch.setenv("CODERAG_REPOS", json.dumps([{"name": "shop", "url": str(upstream), "branch": "main"}]))
    monkeypatch.setenv("CODERAG_GITHUB_WEBHOOK_SECRET", SECRET)
    settings = Settings.from_env()
    sessions = open_database(settings)
    emb = CountingEmbedder(local_embedder)
    runtime = FreshnessRuntime.build(load().freshness, settings, sessions=sessions, embedder=emb, store=store)
    ctx = ServerContext(service=None, sessions=sessions, settings=settings, store=store, freshness=runtime)
    server = BackgroundServer(build_asgi(ctx)).start()

    class F:
        pass

    f = F()
    f.upstream, f.runtime, f.emb, f.url, f.sessions, f.store = upstream, runtime, emb, server.url, sessions, store

    def push(wait: bool = True):
        r = post_github(f.url, SECRET, push_payload("shop"))
        assert r.status_code == 202, r.text
        if wait:
            assert wait_idle(runtime.workers, "shop", 120)
        return runtime.workers.stats("shop")["last"]

    f.push = push
    try:
        yield f
    finally:
        server.stop()
        runtime.workers.stop()
