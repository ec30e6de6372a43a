"""`coderag doctor` finds, and with --repair fixes, an index damaged by hand: vectors
removed from some objects, an orphan run left behind, call-graph rows without chunks."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from typer.testing import CliRunner

from helpers.faults import make_versioned_repo


def test_doctor_finds_and_repairs_hand_damage(settings_env, store, local_embedder, tmp_path):
    from sqlalchemy import insert
    from weaviate.classes.query import Filter

    from bot.cli import app
    from common.db import open_database
    from common.settings import Settings
    from indexer import index_repository
    from indexer.graph.sql_models import CodeDefinition
    from indexer.store.versions import missing_vectors

    settings = Settings.from_env()
    sessions = open_database(settings)
    repo = make_versioned_repo(tmp_path, 6, 3)
    summary = index_repository(repo, name="gen", settings=settings, store=store, embedder=local_embedder,
                               sessions=sessions)
    runner = CliRunner()
    clean = runner.invoke(app, ["doctor", "--json"])
    assert clean.exit_code == 0, clean.output
    assert json.loads(clean.stdout)["problems"] == 0

    # Damage 1: three searchable objects lose their vector (replaced without one).
    objs = store._cols.chunks.query.fetch_objects(filters=store.query.visible_filter(["gen"]), limit=3).objects
    damaged = [str(o.uuid) for o in objs]
    for o in objs:
        store._cols.chunks.data.replace(uuid=o.uuid, properties=o.properties)
    assert sorted(missing_vectors(store, damaged, 384)) == sorted(damaged)
    # Damage 2: an orphan run (objects of a run that never committed).
    run = store.runs.begin("gen", "full")
    src = store._cols.chunks.query.fetch_objects(filters=store.query.visible_filter(["gen"]), limit=5, include_vector=True,
                                           offset=3).objects
    store.data.write_chunks([(dict(o.properties), o.vector["default"]) for o in src], run=run)
    # Damage 3: call-graph rows of a file that has no chunk.
    with sessions.begin() as s:
        s.execute(insert(CodeDefinition), [{"repo": "gen", "path": "pkg/ghost.py", "symbol": "ghost", "name": "ghost",
                                            "kind": "function", "start_line": 1, "end_line": 2}])

    found = runner.invoke(app, ["doctor", "--json"])
    assert found.exit_code == 1, found.output
    (gen,) = json.loads(found.stdout)["sources"]
    print(f"\ndoctor found: missing_vectors={gen['missing_vectors']} orphans={gen['orphans']} "
          f"orphan_runs={gen['orphan_runs']} graph_orphans={gen['graph_orphans']} visible={gen['visible']}")
    assert (gen["missing_vectors"], gen["orphans"], gen["graph_orphans"]) == (3, 5, 1)
    assert gen["orphan_runs"] == [run.gen] and gen["visible"] == summary.chunks
    table = runner.invoke(app, ["doctor"])
    assert table.exit_code == 1 and "gen" in table.stdout and "3 searchable objects have no vector" in table.stdout

    fixed = runner.invoke(app, ["doctor", "--repair"])
    print(fixed.stdout)
    assert fixed.exit_code == 0, fixed.output
    assert "re-inserted 3 objects" in fixed.stdout and "deleted 5 orphan" in fixed.stdout
    again = json.loads(runner.invoke(app, ["doctor", "--json"]).stdout)
    assert again["problems"] == 0
    (gen,) = again["sources"]
    assert (gen["visible"], gen["orphans"], gen["missing_vectors"]) == (summary.chunks, 0, 0)
    assert store.query.count_where(Filter.by_property("repo").equal("gen")) == summary.chunks
    assert missing_vectors(store, damaged, 384) == []
    # The repaired objects are found by vector search again (re-embedded from their text).
    for uid in damaged:
        obj = store._cols.chunks.query.fetch_object_by_id(uid, include_vector=True)
        hits = store.query.hybrid("x", obj.vector["default"], alpha=1.0, limit=1, repos=["gen"])
        assert hits and hits[0].uuid == uid


def test_doctor_checks_the_code_files_rows(settings_env, store, local_embedder, tmp_path):
    """``code_files`` rows (one per file of the call graph) of a source that is gone, of
    another commit than the indexed one, or of a file without chunks are reported, and
    --repair removes them; an empty ``__init__.py`` (no chunk, no facts) is no problem."""
    from datetime import datetime, timezone

    from sqlalchemy import insert, select, update

    from bot.cli import app
    from helpers.gitrepo import head_sha, make_git_repo
    from common.db import open_database
    from common.settings import Settings
    from indexer import index_repository
    from indexer.graph.sql_models import CodeFile

    settings = Settings.from_env()
    sessions = open_database(settings)
    repo = make_git_repo(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "from pkg.b import b\n\n\ndef a():\n    return b()\n",
                                    "pkg/b.py": "def b():\n    return 1\n"}, name="small")
    index_repository(repo, name="small", settings=settings, store=store, embedder=local_embedder, sessions=sessions)
    runner = CliRunner()
    clean = runner.invoke(app, ["doctor", "--json"])
    assert clean.exit_code == 0 and json.loads(clean.stdout)["problems"] == 0, clean.output

    facts = json.dumps({"path": "pkg/ghost.py", "language": "python", "package": "pkg.ghost",
                        "definitions": [{"symbol": "ghost", "name": "ghost", "kind": "function",
                                         "start_line": 1, "end_line": 2}], "calls": [], "imports": [], "variables": {}})
    now = datetime.now(timezone.utc)
    with sessions.begin() as s:
        s.execute(insert(CodeFile), [  # a file without chunks, and a repo that is not indexed at all
            {"repo": "small", "path": "pkg/ghost.py", "language": "python", "commit": head_sha(repo),
             "facts_json": facts, "updated_at": now},
            {"repo": "vanished", "path": "x.py", "language": "python", "commit": "f" * 40, "facts_json": facts,
             "updated_at": now}])
        s.execute(update(CodeFile).where(CodeFile.repo == "small", CodeFile.path == "pkg/b.py").values(commit="e" * 40))

    found = runner.invoke(app, ["doctor", "--json"])
    assert found.exit_code == 1, found.output
    reports = {r["name"]: r for r in json.loads(found.stdout)["sources"]}
    assert set(reports) == {"small", "vanished"}
    assert reports["small"]["code_file_orphan_reasons"] == {"pkg/b.py": "commit", "pkg/ghost.py": "no chunks"}
    assert (reports["vanished"]["has_record"], reports["vanished"]["code_file_orphans"]) == (False, 1)
    table = runner.invoke(app, ["doctor"])
    assert "1 call-graph file rows (code_files) without a source record" in table.stdout, table.stdout
    assert "are of another commit than the indexed" in table.stdout and "with no searchable chunk" in table.stdout

    fixed = runner.invoke(app, ["doctor", "--repair"])
    assert fixed.exit_code == 0, fixed.output
    assert "re-indexed at the recorded commit" in fixed.output  # b.py's graph restored, not deleted
    assert json.loads(runner.invoke(app, ["doctor", "--json"]).stdout)["problems"] == 0
    with sessions() as s:
        left = sorted(s.execute(select(CodeFile.repo, CodeFile.path, CodeFile.commit)).all())
    assert left == [("small", p, head_sha(repo)) for p in ("pkg/__init__.py", "pkg/a.py", "pkg/b.py")]



def _index(tmp_path, store, local_embedder, name="keep"):
    from helpers.gitrepo import make_git_repo
    from common.db import open_database
    from common.settings import Settings
    from indexer import index_repository

    settings = Settings.from_env()
    sessions = open_database(settings)
    files = {f"pkg/m{i}.py": f"def keep_function_{i}():\n    \"\"\"Function number {i}.\"\"\"\n    return {i}\n"
             for i in range(8)}
    repo = make_git_repo(tmp_path, files, name=name)
    summary = index_repository(repo, name=name, settings=settings, store=store, embedder=local_embedder,
                               sessions=sessions)
    return repo, sessions, summary


def _searchable(store, name: str) -> set[str]:
    return {c.symbol for c in store.query.keyword("keep function", limit=50, repos=[name], include_vector=False)}


@pytest.mark.parametrize("damage", ["deleted_chunks", "missing_generation"])
def test_doctor_restores_lost_content_instead_of_shrinking_the_record(damage, settings_env, store, local_embedder,
                                                                      tmp_path):
    from weaviate.classes.query import Filter

    from bot.cli import app

    repo, _sessions, summary = _index(tmp_path, store, local_embedder)
    before = _searchable(store, "keep")
    assert len(before) == 8
    if damage == "deleted_chunks":
        objs = store._cols.chunks.query.fetch_objects(filters=store.query.visible_filter(["keep"]), limit=3).objects
        for o in objs:
            store._cols.chunks.data.delete_by_id(o.uuid)
    else:  # the record names a generation whose objects are gone (the older complete one stays)
        rec = store.sources.get("keep")
        store.sources.save(replace(rec, run_gen=rec.run_gen + 5, run_floor=rec.run_gen + 5))
    assert _searchable(store, "keep") != before
    runner = CliRunner()
    assert runner.invoke(app, ["doctor", "--json"]).exit_code == 1
    fixed = runner.invoke(app, ["doctor", "--repair"])
    assert fixed.exit_code == 0, fixed.output
    assert "re-indexed at the recorded commit" in fixed.output, fixed.output
    assert _searchable(store, "keep") == before
    assert store.sources.get("keep").chunks == summary.chunks == store.query.count("keep")
    assert store.query.count_where(Filter.by_property("repo").equal("keep")) == summary.chunks


def test_doctor_without_the_checkout_keeps_the_record_and_exits_1(settings_env, store, local_embedder, tmp_path):
    import shutil

    from bot.cli import app

    repo, _sessions, summary = _index(tmp_path, store, local_embedder, name="gone")
    objs = store._cols.chunks.query.fetch_objects(filters=store.query.visible_filter(["gone"]), limit=2).objects
    for o in objs:
        store._cols.chunks.data.delete_by_id(o.uuid)
    shutil.rmtree(repo)
    fixed = CliRunner().invoke(app, ["doctor", "--repair"])
    assert fixed.exit_code == 1, fixed.output
    assert "re-index needed" in fixed.output
    assert store.sources.get("gone").chunks == summary.chunks  # never lowered to what is left


def test_a_first_index_that_stopped_before_its_vectors_is_found_and_finished(settings_env, store, local_embedder,
                                                                          tmp_path):
    from weaviate.classes.query import Filter

    from bot.cli import app
    from indexer.store.versions import source_filter

    _repo, _sessions, summary = _index(tmp_path, store, local_embedder, name="half")
    objs = store._cols.chunks.query.fetch_objects(filters=store.query.visible_filter(["half"]), limit=3).objects
    for o in objs:  # as phase 2 left them when the process was killed: keyword-only, waiting
        store._cols.chunks.data.replace(uuid=o.uuid, properties=dict(o.properties, vector_state="pending"))
    store.sources.save(replace(store.sources.get("half"), vectors_pending=3))
    runner = CliRunner()
    found = runner.invoke(app, ["doctor", "--json"])
    assert found.exit_code == 1, found.output
    (half,) = json.loads(found.stdout)["sources"]
    assert any("stopped before its vectors were done" in p for p in half["problems"]), half["problems"]
    fixed = runner.invoke(app, ["doctor", "--repair"])
    assert fixed.exit_code == 0, fixed.output
    rec = store.sources.get("half")
    assert rec.vectors_pending == 0 and rec.chunks == summary.chunks
    pending = store.query.count_where(source_filter(rec) & Filter.by_property("vector_state").equal("pending"))
    assert pending == 0


def test_a_damaged_call_graph_row_crashes_nothing_and_is_restored(settings_env, store, local_embedder, tmp_path):
    import subprocess
    import sys

    from sqlalchemy import select, update

    from bot.cli import app
    from indexer.graph.sql_models import CodeFile

    _repo, sessions, _summary = _index(tmp_path, store, local_embedder, name="rows")
    with sessions.begin() as s:
        s.execute(update(CodeFile).where(CodeFile.repo == "rows", CodeFile.path == "pkg/m3.py")
                  .values(facts_json="{not json"))
    impact = subprocess.run([sys.executable, "-m", "bot.cli", "impact", "keep_function_1", "--json"],
                            env=settings_env, capture_output=True, text=True, timeout=300)
    assert impact.returncode == 0 and "Traceback" not in impact.stderr, impact.stderr
    runner = CliRunner()
    found = runner.invoke(app, ["doctor", "--json"])
    assert found.exit_code == 1 and "do not decode" in found.stdout, found.output
    fixed = runner.invoke(app, ["doctor", "--repair"])
    assert fixed.exit_code == 0 and "re-indexed at the recorded commit" in fixed.output, fixed.output
    with sessions() as s:
        raw = s.execute(select(CodeFile.facts_json).where(CodeFile.repo == "rows",
                                                          CodeFile.path == "pkg/m3.py")).scalar()
    assert json.loads(raw)["definitions"][0]["name"] == "keep_function_3"


def test_doctor_and_impact_report_imports_of_own_modules_that_map_to_none(settings_env, store, local_embedder,
                                                                          tmp_path):
    """A warning, not a problem (exit 0): ``pkg.gone`` looks like the repository's own
    package but no module of it; ``impact`` says its callers may miss calls through it."""
    from bot.cli import app
    from helpers.gitrepo import make_git_repo
    from common.db import open_database
    from common.settings import Settings
    from indexer import index_repository

    settings = Settings.from_env()
    sessions = open_database(settings)
    repo = make_git_repo(tmp_path, {"pkg/__init__.py": "", "pkg/b.py": "def b():\n    return 1\n",
                                    "pkg/a.py": "from pkg.b import b\nfrom pkg.gone import z\n\n\ndef a():\n"
                                                "    return b() + z()\n"}, name="imports")
    index_repository(repo, name="imports", settings=settings, store=store, embedder=local_embedder, sessions=sessions)
    runner = CliRunner()
    out = runner.invoke(app, ["doctor", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["unmapped_imports"] == {"imports": [{"path": "pkg/a.py", "line": 2,
                                                                       "module": "pkg.gone"}]}
    table = runner.invoke(app, ["doctor"])
    assert "imports: 1 import(s) of the repository's own modules map to none of them (e.g. pkg/a.py:2 pkg.gone)" \
        in table.stdout
    impact = json.loads(runner.invoke(app, ["impact", "b", "--repo", "imports", "--json"]).stdout)
    assert [(c["path"], c["symbol"]) for c in impact["callers"]] == [("pkg/a.py", "a")]
    assert impact["unmapped_imports"] == [{"path": "pkg/a.py", "line": 2, "module": "pkg.gone"}]
