"""What an indexing run reports: :class:`PipelineResult` (one run of the pipeline),
:class:`RunCounters`, the base of the use cases' results that embed it, and what a
committed run tells its subscribers (:class:`RunEvent`, :class:`Subscriber`)."""
from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Callable, ClassVar, Protocol

from .models import Document, Skips, SourceRecord
from .stages import ParsedDocuments

@dataclass
class PipelineResult:
    """What one :meth:`IndexingPipeline.run` did. Times are wall-clock seconds; the stage
    seconds (parse, embed, write) overlap, so they add up to more than ``seconds_total``.
    The results of the use cases (:class:`IndexSummary`, ``SyncResult``,
    ``SpaceSyncResult``) embed it as ``run`` (see :class:`RunCounters`) instead of copying
    its counters.

    ``vectors_pending``: chunks committed keyword-ready whose vector the second phase
    filled in (first index only, see :meth:`IndexingPipeline.run`); ``keyword_only``:
    chunks the embedding policy leaves without a vector; ``seconds_keyword_ready``: from
    the start of the run until the keyword-ready commit (``None``: single-phase run);
    ``max_chunks_in_flight``: most chunks held by the stages at once (the memory bound)."""

    record: SourceRecord
    files_indexed: int = 0
    chunks: int = 0
    embedded: int = 0
    reused_vectors: int = 0
    keyword_only: int = 0
    vectors_pending: int = 0
    chunks_written: int = 0
    chunks_deleted: int = 0
    graph_definitions: int = 0
    graph_edges: int = 0
    parse_warnings: int = 0
    skips: Skips = field(default_factory=Skips)
    seconds_parse: float = 0.0
    seconds_graph: float = 0.0
    seconds_embed: float = 0.0
    seconds_write: float = 0.0
    seconds_keyword_ready: float | None = None
    seconds_total: float = 0.0
    max_chunks_in_flight: int = 0

    @classmethod
    def parsed(cls, name: str, parsed: ParsedDocuments, skips: Skips) -> "PipelineResult":
        """The result so far of a run of source ``name`` that has chunked its documents
        (``parsed``, :func:`parse_documents`) and nothing more: files, chunks, definitions,
        parse warnings, ``skips`` and the parse and graph times."""
        return cls(record=SourceRecord(name=name), files_indexed=parsed.files_indexed, chunks=len(parsed.chunks),
                   parse_warnings=parsed.parse_warnings, skips=skips, seconds_parse=parsed.seconds_parse,
                   seconds_graph=parsed.seconds_graph,
                   graph_definitions=sum(len(f.definitions) for f in parsed.facts.values() if f))


#: The counters a :class:`RunCounters` result reads from its run, each with the value it
#: has when nothing ran (``run`` is ``None``).
_RUN_DEFAULTS: dict[str, Callable[[], object]] = {
    f.name: (f.default_factory if f.default_factory is not MISSING else (lambda value=f.default: value))
    for f in fields(PipelineResult) if f.name != "record"}


class RunCounters:
    """Base of the results that embed the :class:`PipelineResult` of their run as ``run``
    (``None``: nothing ran, e.g. a sync whose head was already indexed).

    A counter of the run that the result does not declare itself (``embedded``,
    ``chunks_written``, ``skips``, ``seconds_total``...) reads the run's (its zero value
    without a run); :meth:`to_dict` is the result's JSON output, the attributes named in
    ``KEYS``, in that order (plus ``refs`` when the run kept named refs)."""

    KEYS: ClassVar[tuple[str, ...]] = ()

    def __getattr__(self, name: str):
        # only called for attributes the instance and its class do not have
        if name in _RUN_DEFAULTS:
            run = self.__dict__.get("run")
            return _RUN_DEFAULTS[name]() if run is None else getattr(run, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def to_dict(self) -> dict:
        """The result as the ``--json`` output prints it: ``KEYS`` -> values (a ``Counter``
        or dict value as a plain dict copy)."""
        out = {}
        for key in self.KEYS:
            value = getattr(self, key)
            out[key] = dict(value) if isinstance(value, dict) else value
        refs = self.__dict__.get("refs")
        if refs:  # named refs kept with the run (indexer.sources.refs); absent when none
            out["refs"] = [r.to_dict() for r in refs]
        return out


@dataclass(frozen=True)
class RunEvent:
    """What one committed run changed, as its subscribers see it.

    ``source``/``kind``/``root``/``commit``: the batch's (``kind``: ``git`` or
    ``confluence``). ``changed_paths``: paths the run added or changed (``None``: a full
    run, every document of the source). ``deleted_paths``: paths that left the source.
    ``documents``: the decoded documents some subscriber asked for (:meth:`Subscriber.wants`),
    by path."""

    source: str
    kind: str
    root: str
    commit: str
    changed_paths: frozenset[str] | None
    deleted_paths: frozenset[str]
    documents: dict[str, Document]


class Subscriber(Protocol):
    """Told about every committed run of a pipeline (runbook drift, "who knows this").

    ``wants(kind, path)``: whether the run should keep the decoded document at ``path`` of
    a ``kind`` source for this subscriber (kept in memory until the run ends). Calling it
    with ``(pipeline, event)`` does the subscriber's work; an exception it raises is logged
    and does not fail the run. A subscriber may also have ``removed(pipeline, source)``,
    called when a source leaves the index through the pipeline
    (:meth:`~indexer.pipeline.IndexingPipeline.source_removed`)."""

    name: str

    def wants(self, kind: str, path: str) -> bool: ...

    def __call__(self, pipeline: Any, event: RunEvent) -> None: ...  # pipeline: the IndexingPipeline
