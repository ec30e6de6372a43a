"""The chunk store's boundary: outside ``indexer/store/``, no module of ``indexer`` or ``bot``
touches a Weaviate collection, imports the Weaviate client, or reaches into a private of
the store (its namespaces ``schema``, ``query``, ``data``, ``runs``, ``sources`` are the way
in). An AST walk, no Weaviate needed."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STORE_DIR = ROOT / "indexer" / "store"

#: Attributes that are a Weaviate collection (or the client's collection registry),
#: whatever the receiver.
COLLECTION_ATTRS = {"collection", "_collection", "collections", "sources_col", "_cols", "_insert"}
#: Public-looking attributes the store no longer has, that were its raw Weaviate handles.
STORE_HANDLES = {"client", "chunks"}
#: The store's namespaces: a private attribute on one of them is the store's private too.
NAMESPACES = {"schema", "query", "data", "runs", "sources"}
#: Names that hold a ChunkStore (``store``, ``self.store``, ``ctx.store``, ``self._store``,
#: ``chunk_store``) or are its class.
STORE_NAME = re.compile(r"^_?(chunk_)?store$|^ChunkStore$")


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_store(node: ast.AST) -> bool:
    """``node`` is a store (by name), or one of its namespaces (``store.query``)."""
    name = _last_name(node)
    if name is not None and STORE_NAME.match(name):
        return True
    return isinstance(node, ast.Attribute) and node.attr in NAMESPACES and _is_store(node.value)


def _private(attr: str) -> bool:
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def violations(source: str, filename: str = "<string>") -> list[str]:
    """Every boundary violation in one module's source, as ``file:line: what``."""
    out = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "weaviate" or alias.name.startswith("weaviate."):
                    out.append(f"{filename}:{node.lineno}: imports {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level == 0 and (mod == "weaviate" or mod.startswith("weaviate.")):
                out.append(f"{filename}:{node.lineno}: imports from {mod}")
        elif isinstance(node, ast.Attribute):
            if node.attr in COLLECTION_ATTRS:
                out.append(f"{filename}:{node.lineno}: .{node.attr}")
            elif _is_store(node.value) and (_private(node.attr) or node.attr in STORE_HANDLES):
                out.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "getattr", "setattr", "hasattr") and len(node.args) >= 2 and _is_store(node.args[0]):
            arg = node.args[1]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and (
                    _private(arg.value) or arg.value in STORE_HANDLES | COLLECTION_ATTRS):
                out.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return out


def _modules() -> list[Path]:
    files = [p for d in ("indexer", "bot") for p in sorted((ROOT / d).rglob("*.py"))]
    return [p for p in files if STORE_DIR not in p.parents and "__pycache__" not in p.parts]


def test_nothing_outside_the_store_touches_its_collections_or_privates():
    files = _modules()
    assert len(files) > 50 and any(p.name == "pipeline.py" for p in files)
    found = [v for p in files for v in violations(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert found == [], "go through the store's namespaces instead:\n" + "\n".join(found)


@pytest.mark.parametrize("code", [
    "self.store._insert(data)",
    "ChunkStore._insert = insert",
    "store.chunks.query.fetch_objects(limit=1)",
    "rt.ctx.store.chunks.data.delete_by_id(u)",
    "store.client.collections.get('CodeChunk')",
    "client = store.client",
    "store._delete_all(flt)",
    "self._store._settings",
    "store.query._cols.chunks",
    "store.data._cols",
    "x.collection.query.hybrid(q)",
    "getattr(store, '_url')",
    "import weaviate",
    "from weaviate.classes.query import Filter",
])
def test_each_kind_of_violation_is_reported(code):
    assert violations(code), code


@pytest.mark.parametrize("code", [
    "store.query.hybrid('q', [0.1], alpha=0.5, limit=5)",
    "store.sources.get('shop')",
    "res.chunks",
    "self._store.data.insert([])",
    "sql_store.replace_files(s, 'r', 'c', {})",
    "self._lock.acquire()",
    "store.__class__",
    "from .store import weaviate_store",
])
def test_the_public_way_in_is_not_reported(code):
    assert violations(code) == []


def test_source_records_are_typed_not_mappings():
    from indexer.models import SourceRecord
    from indexer.store.sources import SourcesNamespace

    record = SourceRecord(name="shop", commit="a" * 40)
    with pytest.raises(TypeError):
        record["name"]  # noqa: B018 - no dict access: the attributes are the interface
    assert not hasattr(record, "get") and not hasattr(record, "keys")
    with pytest.raises(TypeError, match="SourceRecord"):
        SourcesNamespace(None).save({"name": "shop"})  # a dict is refused before Weaviate is touched
