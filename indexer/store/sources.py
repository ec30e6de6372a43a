"""``store.sources``: the source records (one per indexed repository or space) and the
embedding-model guard they carry."""
from __future__ import annotations

import json

from weaviate.classes.query import Filter
from weaviate.util import generate_uuid5

from common.errors import ModelMismatch
from ..models import SourceRecord
from .connection import Collections
from .records import source_properties


def _record_uuid(name: str) -> str:
    return generate_uuid5("source\0" + name)


class SourcesNamespace:
    """``store.sources``: read, write and delete :class:`SourceRecord` objects."""

    def __init__(self, cols: Collections):
        self._cols = cols

    def all(self) -> list[SourceRecord]:
        """Every indexed source's record, sorted by name."""
        out = [SourceRecord.from_properties(source_properties(obj.properties)) for obj in self._cols.sources.iterator()]
        return sorted(out, key=lambda r: r.name)

    def get(self, name: str) -> SourceRecord | None:
        """The committed record of source ``name`` (as :meth:`all` lists it), or ``None``."""
        obj = self._cols.sources.query.fetch_object_by_id(_record_uuid(name))
        return SourceRecord.from_properties(source_properties(obj.properties)) if obj is not None else None

    def save(self, record: SourceRecord) -> None:
        """Insert or replace ``record`` (keyed by its ``name``). ``damaged`` is a read-time
        finding and never stored; ``indexed_at=None`` leaves the stored value unset.
        Raises ``TypeError`` for anything but a :class:`SourceRecord`."""
        if not isinstance(record, SourceRecord):
            raise TypeError(f"save() takes a SourceRecord, not {type(record).__name__}")
        props = record.to_dict()
        props.pop("damaged", None)  # a read-time finding, never stored
        props["skipped_json"] = json.dumps(props.pop("skipped", {}))
        if props.get("indexed_at") is None:
            props.pop("indexed_at", None)
        props["replaced_json"] = json.dumps(sorted(props.pop("replaced") or []))
        if record.base:  # a ref source (indexer.sources.refs); other records store none of these
            props["differs_json"] = json.dumps(sorted(props.pop("differs") or []))
        uid = _record_uuid(record.name)
        if self._cols.sources.data.exists(uid):
            self._cols.sources.data.replace(uuid=uid, properties=props, vector=[0.0])
        else:
            self._cols.sources.data.insert(properties=props, uuid=uid, vector=[0.0])

    def delete(self, name: str) -> None:
        """Delete the record of ``name`` (nothing when there is none)."""
        self._cols.sources.data.delete_many(where=Filter.by_property("name").equal(name))

    # -- the model guard ---------------------------------------------------------------
    def model(self) -> str | None:
        """Embedding model of the vectors already in the index, or ``None`` if it is empty.
        Raises :class:`ModelMismatch` when the records name more than one."""
        models = {s.model for s in self.all() if s.model}
        if len(models) > 1:
            raise ModelMismatch(f"the index mixes embedding models {sorted(models)}; run `coderag reset`")
        return models.pop() if models else None

    def check_model(self, model_name: str) -> None:
        """Raise :class:`ModelMismatch` if the index was built with another model."""
        current = self.model()
        if current and current != model_name:
            raise ModelMismatch(
                f"the index was built with embedding model {current!r} but {model_name!r} is "
                f"configured; use the same model (VOYAGE_API_KEY set or not), or `coderag reset` and re-index")
