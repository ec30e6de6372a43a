"""Runbook endpoint references are resolved against an OpenAPI spec as well as the code."""
from __future__ import annotations

from sqlalchemy import select

from helpers.gitrepo import head_sha, make_git_repo
from helpers.openapi_spec import SPEC_YAML
from indexer import on_repo_indexed

RUNBOOK = """# Orders runbook

## Checks

1. `GET /health` answers 200.
2. `GET /orders/{id}` returns the order; `DELETE /orders/{id}` cancels it.
3. `POST /v9/teleport` is gone.
"""


def test_endpoints_in_the_spec_are_ok_with_the_spec_line_as_evidence(db_env, tmp_path):
    from indexer.drift.models import DocRef

    settings, sessions = db_env
    root = make_git_repo(tmp_path, {"api/openapi.yaml": SPEC_YAML, "docs/runbook.md": RUNBOOK,
                                    "shop/app.py": 'ROUTES = ["/health"]\n'}, name="shop")
    sha = head_sha(root)
    on_repo_indexed(sessions, settings, "shop", root, sha)
    with sessions() as s:
        rows = {r.ref: r for r in s.execute(select(DocRef).where(DocRef.source == "shop")).scalars()}
    lines = SPEC_YAML.split("\n")
    for ref in ("GET /orders/{id}", "DELETE /orders/{id}"):
        assert rows[ref].status == "ok", (ref, rows[ref].status, rows[ref].note)
        path, rest = rows[ref].evidence.split(":", 1)
        assert path == "api/openapi.yaml" and rest.endswith(f"@{sha[:7]}")
        assert lines[int(rest.split("@")[0]) - 1].strip() in ("get:", "delete:")
    assert rows["GET /health"].status == "ok"  # in the code and in the spec
    assert rows["POST /v9/teleport"].status != "ok"


def test_a_method_the_spec_lacks_is_not_ok_and_the_note_names_the_specs_methods(db_env, tmp_path):
    from indexer.drift.models import DocRef

    settings, sessions = db_env
    runbook = ("# Customers runbook\n\n1. `GET /customers/{id}` shows a customer.\n"
               "2. `DELETE /customers/{id}` erases one.\n3. `DELETE /health` is harmless.\n")
    root = make_git_repo(tmp_path, {"api/openapi.yaml": SPEC_YAML, "docs/runbook.md": runbook,
                                    "shop/app.py": 'ROUTES = ["/health"]\n'}, name="shop")
    on_repo_indexed(sessions, settings, "shop", root, head_sha(root))
    with sessions() as s:
        rows = {r.ref: r for r in s.execute(select(DocRef).where(DocRef.source == "shop")).scalars()}
    assert rows["GET /customers/{id}"].status == "ok"
    gone = rows["DELETE /customers/{id}"]
    assert gone.status != "ok" and "the spec has GET, PATCH, not DELETE" in gone.note, (gone.status, gone.note)
    assert rows["DELETE /health"].status == "ok"  # the code has that route too (code routes carry no method)


def test_an_operation_the_spec_lost_is_stale_with_the_commit_that_removed_it(db_env, tmp_path):
    from helpers.gitrepo import commit_files
    from helpers.history_repo import SPEC_V4
    from indexer.drift.models import DocRef

    settings, sessions = db_env
    root = make_git_repo(tmp_path, {"api/openapi.yaml": SPEC_YAML, "docs/runbook.md": RUNBOOK,
                                    "shop/app.py": 'ROUTES = ["/health"]\n'}, name="shop")
    cancel = commit_files(root, {"api/openapi.yaml": SPEC_V4}, message="Orders can no longer be cancelled")
    commit_files(root, {"shop/app.py": 'ROUTES = ["/health", "/ready"]\n'}, message="readiness route")
    on_repo_indexed(sessions, settings, "shop", root, head_sha(root))
    with sessions() as s:
        rows = {r.ref: r for r in s.execute(select(DocRef).where(DocRef.source == "shop")).scalars()}
    gone = rows["DELETE /orders/{id}"]
    assert (gone.status, gone.removed_commit, gone.removed_summary) == \
        ("stale", cancel, "Orders can no longer be cancelled"), (gone.status, gone.note)
    assert gone.note == "removed from api/openapi.yaml"
    assert rows["GET /orders/{id}"].status == "ok"
