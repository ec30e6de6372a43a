"""Shared fixtures: one real weaviate-server for the session, env, store, embedder, git repos.

Nothing here mocks a database: every store test talks to a real ``weaviate-server``
process started from ``find_binary(WEAVIATE_BINARY)``.
"""
from __future__ import annotations

import os

import pytest

from helpers.cli import tiny  # noqa: F401  (fixture: the tiny repository, indexed)
from helpers.freshness import fresh  # noqa: F401  (fixture: the shop upstream behind a webhook)
from helpers.gitrepo import make_git_repo  # noqa: F401  (re-exported for tests)
from helpers.processes import stop_process

# Offline model loading, also for the CLI subprocesses that inherit the environment.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")



def _declared_env() -> tuple[str, ...]:
    """Every variable common.settings declares (and the other names a field accepts, such
    as the Teams SDK's): a developer's own CODERAG_DATABASE_URL or SLACK_* must not leak
    into the tests."""
    from common.settings import declared_variables

    names = []
    for name, (_group, f) in declared_variables().items():
        names.append(name)
        names.extend((f.json_schema_extra or {}).get("also", ()))
    return tuple(names)


# Environment variables that change coderag's behaviour; every test starts without them.
_CODERAG_ENV = _declared_env()
# Where the weaviate-server binary is (the machine's, not a behaviour): kept for the tests.
_WEAVIATE_BINARY = os.environ.get("WEAVIATE_BINARY")


@pytest.fixture(autouse=True)
def _clean_coderag_env(monkeypatch):
    for name in _CODERAG_ENV:
        monkeypatch.delenv(name, raising=False)
    if _WEAVIATE_BINARY:
        monkeypatch.setenv("WEAVIATE_BINARY", _WEAVIATE_BINARY)


@pytest.fixture(scope="session")
def weaviate_binary() -> str:
    from helpers.components import missing
    from common.errors import CoderagError
    from indexer.store.weaviate_server import find_binary

    try:
        return find_binary(_WEAVIATE_BINARY)
    except CoderagError as exc:
        missing("the weaviate-server binary", f"{exc} (bash scripts/install.sh builds it)")


@pytest.fixture(scope="session")
def weaviate_server(tmp_path_factory, weaviate_binary):
    """A real weaviate-server child process on free loopback ports, for the whole session."""
    from indexer.store.weaviate_server import start_server

    root = tmp_path_factory.mktemp("weaviate")
    proc, info = start_server(weaviate_binary, root / "data", root / "server.log", detach=False)
    try:
        yield info
    finally:
        stop_process(proc)


@pytest.fixture
def settings_env(monkeypatch, tmp_path, weaviate_server) -> dict:
    """Point coderag at the session server; returns the resulting environment (for subprocesses)."""
    for name in _CODERAG_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WEAVIATE_URL", f"http://127.0.0.1:{weaviate_server.http_port}")
    monkeypatch.setenv("WEAVIATE_GRPC_PORT", str(weaviate_server.grpc_port))
    home = tmp_path / "coderag-home"
    home.mkdir()
    monkeypatch.setenv("CODERAG_HOME", str(home))
    # The reference runtime: every test gets a fresh CODERAG_HOME, and the ONNX runtime
    # would export the model (~10 s) into each (tests/unit/test_embeddings_onnx.py covers it).
    monkeypatch.setenv("CODERAG_EMBEDDING_RUNTIME", "sentence-transformers")
    return dict(os.environ)


@pytest.fixture
def store(settings_env):
    """A fresh ChunkStore on the session server, with an empty index."""
    from common.settings import Settings
    from indexer import ChunkStore

    s = ChunkStore.open(Settings.from_env())
    s.schema.reset()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="session")
def local_embedder():
    """The real MiniLM embedder, loaded once (a few seconds) and shared."""
    from indexer.embeddings.local import LocalEmbedder

    return LocalEmbedder()


# --------------------------------------------------------------------------- SQL databases

@pytest.fixture(scope="session")
def postgres_server_url():
    """A real PostgreSQL server (``CODERAG_TEST_POSTGRES_URL`` or one started by
    ``scripts/start_postgres.sh`` for the session)."""
    from helpers.components import require_module
    from helpers.postgres import postgres_server

    require_module("psycopg", "the PostgreSQL driver (psycopg)",
                   "pip install -e '.[test]' installs it")
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """An empty database URL: SQLite in ``tmp_path``, or a fresh database on the real server."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'coderag.db'}"
        return
    from helpers.postgres import fresh_database

    with fresh_database(request.getfixturevalue("postgres_server_url")) as url:
        yield url


@pytest.fixture(autouse=True)
def _no_installed_settings():
    """Settings one test's `coderag` run installed for the scheduler's job bodies
    (``common.settings.install``) never reach the next test."""
    from common.settings import install

    install(None)
    yield
    install(None)


@pytest.fixture
def fake_voyage(monkeypatch):
    """A local stand-in for Voyage's API, with ``VOYAGE_BASE_URL`` pointing at it and no
    proxy between; stopped after the test."""
    from helpers.fake_voyage import start_fake_voyage

    fv = start_fake_voyage()
    monkeypatch.setenv("VOYAGE_BASE_URL", fv.base_url)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    yield fv
    fv.stop()


@pytest.fixture
def db_env(tmp_path, monkeypatch, db_url):
    """``(Settings, sessionmaker)`` on a fresh SQLite or PostgreSQL database (``db_url``),
    with ``CODERAG_HOME`` under the test's temporary folder."""
    from common.db import open_database
    from common.settings import Settings

    monkeypatch.setenv("CODERAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODERAG_DATABASE_URL", db_url)
    settings = Settings.from_env()
    return settings, open_database(settings)


@pytest.fixture(autouse=True)
def _stop_embedded_weaviates(request):
    """Stop every embedded ``weaviate-server`` a test's ``coderag`` processes started under
    its temporary folder (the embedded default outlives the command on purpose, so the
    next command reuses it; a test's servers would otherwise run on, orphaned)."""
    # asked for before the test runs, so that it is torn down after this fixture
    tmp = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if tmp is None:
        return
    from indexer.store.weaviate_server import EmbeddedWeaviate

    for state in tmp.rglob("weaviate/server.json"):
        EmbeddedWeaviate(state.parent.parent).stop(timeout_s=10)
