"""What ``coderag status`` adds to the Weaviate source records: per source, the last
error, the next scheduled run and (Confluence) the newest page version."""
from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import sessionmaker

from common.redact import redact_text
from ..models import SourceRecord
from ..store.sql_models import ConfluencePage
from .scheduler import next_runs
from ..store.sync_state import all_states, aware


def freshness_status(sessions: sessionmaker, sources: list[SourceRecord]) -> list[dict]:
    """``sources`` (from ``ChunkStore.sources.all()``), as dicts, each extended with ``last_error``
    (str|None), ``last_attempt_at``, ``next_run`` (UTC datetime|None) and, for
    Confluence, ``version`` (highest page version); plus rows for sources that have
    state (e.g. a first run that failed) but nothing in the index yet. Sorted by name."""
    states = all_states(sessions)
    jobs = next_runs(sessions.kw["bind"])
    with sessions() as s:
        versions = dict(s.execute(select(ConfluencePage.source, func.max(ConfluencePage.version))
                                  .group_by(ConfluencePage.source)).all())
    by_name = {s.name: s.to_dict() for s in sources}
    for name, st in states.items():
        by_name.setdefault(name, {"name": name, "kind": st.kind, "commit": st.commit, "chunks": 0, "files": 0,
                                  "model": "", "indexed_at": aware(st.indexed_at)})
    for name, rec in by_name.items():
        st = states.get(name)
        rec["last_error"] = redact_text(st.last_error) if st else None  # rows written before redaction too
        rec["last_attempt_at"] = aware(st.last_attempt_at) if st else None
        kind = rec.get("kind") or "git"
        rec["next_run"] = jobs.get(f"{'confluence' if kind == 'confluence' else 'repo'}:{name}")
        if kind == "confluence":
            rec["version"] = versions.get(name)
    return [by_name[k] for k in sorted(by_name)]
