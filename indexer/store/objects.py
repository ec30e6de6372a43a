"""Small helpers on Weaviate result objects, shared by the store and its versioning."""
from __future__ import annotations


def default_vector(obj) -> list[float] | None:
    """The object's (default, unnamed) vector as a list of floats, or ``None`` when
    Weaviate returned none (not asked for, or the object is not in the vector index)."""
    vec = getattr(obj, "vector", None)
    if isinstance(vec, dict):
        vec = vec.get("default") or next(iter(vec.values()), None)
    return list(vec) if vec else None
