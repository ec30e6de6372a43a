"""The Weaviate connection and the two collections on it (the store's schema namespace).

:func:`connect` dials Weaviate (``WEAVIATE_URL`` or the embedded server);
:class:`Collections` holds the client and the chunk and source collection handles, which
only the store's namespaces (:mod:`.query`, :mod:`.data`, :mod:`.sources`, :mod:`.runs`)
use; :class:`SchemaNamespace` (``store.schema``) creates, upgrades and drops them.
"""
from __future__ import annotations

import time

import weaviate
from weaviate.classes.init import AdditionalConfig, GrpcConfig, Timeout
from weaviate.exceptions import WeaviateBaseError

from common.errors import WeaviateUnavailable
from common.redact import redact_text, redact_url
from common.settings import Settings
from . import schema
from .records import parse_weaviate_url
from .weaviate_server import EmbeddedWeaviate

GRPC_MAX_RECONNECT_BACKOFF_MS = 5000
SCHEMA_PROPAGATION_TIMEOUT_S = 30.0


def connect(settings: Settings) -> weaviate.WeaviateClient:
    """A connected client: to ``WEAVIATE_URL`` if set, else to the embedded server.

    Raises :class:`WeaviateUnavailable` with a one-line reason if it cannot connect.
    """
    # gRPC reconnects with exponential backoff capped at 120 s by default: after a Weaviate
    # restart, searches of a long-running `serve` would fail for up to two minutes while
    # HTTP (and /readyz) is already fine. Cap the backoff at 5 s.
    grpc = GrpcConfig(channel_options=[("grpc.initial_reconnect_backoff_ms", 500),
                                       ("grpc.max_reconnect_backoff_ms", GRPC_MAX_RECONNECT_BACKOFF_MS)])
    extra = AdditionalConfig(timeout=Timeout(init=10, query=120, insert=300), grpc_config=grpc)
    if settings.weaviate_url:
        host, port, secure = parse_weaviate_url(settings.weaviate_url)
        grpc_port = settings.weaviate_grpc_port
        grpc_host = settings.weaviate_grpc_host or host
        where = redact_url(settings.weaviate_url)  # never print a password of the URL
    else:
        info = EmbeddedWeaviate(settings.home, settings.weaviate_binary, settings.weaviate_log_level).ensure()
        host, secure, port, grpc_port = "127.0.0.1", False, info.http_port, info.grpc_port
        grpc_host = host
        where = f"embedded Weaviate at {info.url}"
    try:
        # skip_init_checks: the client's init checks include a version look-up on pypi.org
        # (a network call from every command); readiness is checked below instead.
        client = weaviate.connect_to_custom(http_host=host, http_port=port, http_secure=secure,
                                            grpc_host=grpc_host, grpc_port=grpc_port,
                                            grpc_secure=secure, additional_config=extra,
                                            skip_init_checks=True)
        ready = client.is_ready()
    except WeaviateBaseError as exc:
        raise WeaviateUnavailable(f"cannot reach Weaviate ({where}): {short(exc)}") from None
    if not ready:
        client.close()
        raise WeaviateUnavailable(f"cannot reach Weaviate ({where}): not ready")
    return client


def http_url(settings: Settings) -> str:
    """Base URL of the Weaviate :func:`connect` talks to now ("" if unknown)."""
    if settings.weaviate_url:
        return settings.weaviate_url.rstrip("/")
    info = EmbeddedWeaviate(settings.home, settings.weaviate_binary).running()
    return info.url if info else ""


def short(exc: Exception) -> str:
    """First line of ``exc``'s text, redacted, at most 300 characters (for error messages)."""
    text = redact_text(str(exc)).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def already_exists(exc: Exception) -> bool:
    """Whether Weaviate refused a create because the class or property already exists
    (``422 … class already exists``): a concurrent creator made it first."""
    return "already exists" in str(exc).lower()


class Collections:
    """The client and the handles of the chunk (``chunks``) and source (``sources``)
    collections, shared by the store's namespaces. :meth:`swap_client` replaces all three
    at once (a reconnect), so every namespace sees the new connection.

    Internal to :mod:`indexer.store`: no other module touches a collection."""

    def __init__(self, client: weaviate.WeaviateClient, replication_factor: int = 1):
        self.client = client
        self.replication_factor = replication_factor
        self.chunks = None
        self.sources = None

    def swap_client(self, client: weaviate.WeaviateClient) -> weaviate.WeaviateClient:
        """Use ``client`` from now on; returns the old one (not closed). The collection
        handles are taken again by the next :meth:`SchemaNamespace.ensure`."""
        old, self.client = self.client, client
        return old


class SchemaNamespace:
    """``store.schema``: the collections themselves (create, upgrade, drop) and the
    connection's readiness."""

    def __init__(self, cols: Collections):
        self._cols = cols

    def ensure(self) -> None:
        """Create the chunk and source collections when missing. In a cluster, a new
        collection reaches the other nodes' schema a moment later and a QUORUM read
        routed there fails ("could not find class"): after creating one, wait (up to
        :data:`SCHEMA_PROPAGATION_TIMEOUT_S`) until both answer a query.

        Raises the client's ``WeaviateBaseError`` on failure (:meth:`prepare` turns it
        into :class:`WeaviateUnavailable`)."""
        cols = self._cols
        created = self._create(schema.CHUNK_COLLECTION, schema.chunk_collection_config(cols.replication_factor))
        created = self._create(schema.SOURCE_COLLECTION,
                               schema.source_collection_config(cols.replication_factor)) or created
        cols.chunks = cols.client.collections.get(schema.CHUNK_COLLECTION)
        cols.sources = cols.client.collections.get(schema.SOURCE_COLLECTION)
        if not created:
            self._add_missing_properties()
        if created and cols.replication_factor > 1:
            self._wait_until_queryable()

    def _create(self, name: str, config: dict) -> bool:
        """Create collection ``name`` (``config``: its ``collections.create`` arguments)
        unless it exists; returns whether it is new. Safe when several processes start at
        once: the one whose create loses the race is told "already exists", which means
        a concurrent creator made it, so it is taken as made (and read back by the caller)."""
        client = self._cols.client
        if client.collections.exists(name):
            return False
        try:
            client.collections.create(**config)
        except WeaviateBaseError as exc:
            if not already_exists(exc):
                raise
        return True

    def prepare(self) -> None:
        """:meth:`ensure`, with a Weaviate failure raised as :class:`WeaviateUnavailable`."""
        try:
            self.ensure()
        except WeaviateBaseError as exc:
            raise WeaviateUnavailable(f"Weaviate schema setup failed: {short(exc)}") from None

    def reset(self) -> None:
        """Drop both collections (all repos, all vectors) and recreate them empty."""
        for name in (schema.CHUNK_COLLECTION, schema.SOURCE_COLLECTION):
            self._cols.client.collections.delete(name)
        self.ensure()

    def is_ready(self) -> bool:
        """Whether Weaviate answers its readiness check on this connection now."""
        return bool(self._cols.client.is_ready())

    def replication_factor(self) -> int:
        """The replication factor of the chunk collection as Weaviate reports it."""
        cfg = self._cols.chunks.config.get().replication_config
        return int(getattr(cfg, "factor", 1) or 1)

    def _add_missing_properties(self) -> None:
        """Collections created by an older coderag lack the versioning properties
        (``run_gen``, ...): add them (objects written before keep no value there)."""
        cols = self._cols
        for col, props in ((cols.chunks, schema.CHUNK_PROPERTIES), (cols.sources, schema.SOURCE_PROPERTIES)):
            have = {p.name for p in col.config.get().properties}
            for prop in props:
                if prop.name not in have:
                    try:
                        col.config.add_property(prop)
                    except WeaviateBaseError as exc:  # another process added it meanwhile
                        if not already_exists(exc):
                            raise

    def _wait_until_queryable(self) -> None:
        deadline = time.monotonic() + SCHEMA_PROPAGATION_TIMEOUT_S
        while True:
            try:
                for col in (self._cols.chunks, self._cols.sources):
                    for _ in range(3):  # the coordinator picks replicas per request
                        col.query.fetch_objects(limit=1)
                return
            except WeaviateBaseError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
