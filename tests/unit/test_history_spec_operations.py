"""The functions a commit changed, for an OpenAPI/Swagger spec: its operations
(``GET /orders/{id}``) are the definitions, on both sides of the diff."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from helpers.history_repo import SPEC_HISTORY, SPEC_V4, build_history_repo

BROKEN = "openapi: 3.0.3\npaths:\n  /orders: [unclosed\n"


def test_operations_are_modified_added_and_deleted_like_functions(tmp_path):
    from indexer.history import commits_touching

    now = int(datetime.now(timezone.utc).timestamp())
    added = SPEC_V4.replace("  /customers/{id}:\n", "  /orders/{id}/notes:\n    get:\n      summary: Notes\n"
                            "      responses:\n        '200':\n          description: The notes\n"
                            "  /customers/{id}:\n")
    history = [*SPEC_HISTORY, ("notes", "erin", 0, {"api/openapi.yaml": added})]
    repo = build_history_repo(tmp_path, now, name="api", history=history)
    found = commits_touching(str(repo.root), "api", ref="HEAD", since=datetime.now(timezone.utc) - timedelta(days=7),
                             paths=["api/openapi.yaml"])
    by = {c.sha: [(f.symbol, f.change, f.line, f.commit) for f in c.functions] for c in found.commits}
    assert by == {
        repo.shas["notes"]: [("GET /orders/{id}/notes", "added", 68, repo.shas["notes"])],
        repo.shas["drop_cancel"]: [("DELETE /orders/{id}", "deleted", 55, repo.shas["version"])],
        repo.shas["version"]: [],
        repo.shas["summary"]: [("GET /orders/{id}", "modified", 43, repo.shas["summary"])],
    }
    assert "  /orders/{id}/notes:" == added.split("\n")[66]  # the path, its get: on line 68
    # a symbol's commits: only those that changed that operation
    one = commits_touching(str(repo.root), "api", ref="HEAD", since=datetime.now(timezone.utc) - timedelta(days=7),
                           paths=["api/openapi.yaml"], symbol="GET /orders/{id}")
    assert [c.sha for c in one.commits] == [repo.shas["summary"]] and one.total == 1


def test_a_malformed_spec_on_one_side_gives_no_definitions_from_that_side(tmp_path):
    from indexer.history import commits_touching

    now = int(datetime.now(timezone.utc).timestamp())
    history = [*SPEC_HISTORY[:2], ("broken", "frank", 2, {"api/openapi.yaml": BROKEN}),
               ("fixed", "gina", 1, {"api/openapi.yaml": SPEC_HISTORY[1][3]["api/openapi.yaml"]})]
    repo = build_history_repo(tmp_path, now, name="api", history=history)
    found = commits_touching(str(repo.root), "api", ref="HEAD", since=datetime.now(timezone.utc) - timedelta(days=7),
                             paths=["api/openapi.yaml"])
    by = {c.sha: {(f.symbol, f.change) for f in c.functions} for c in found.commits}
    # breaking it: every operation is gone from the new side (deleted, cited at the parent)
    assert ("GET /orders/{id}", "deleted") in by[repo.shas["broken"]]
    assert all(change == "deleted" for _s, change in by[repo.shas["broken"]])
    # fixing it: no operations on the old side, so they are all added again
    assert ("DELETE /orders/{id}", "added") in by[repo.shas["fixed"]]
    assert all(change == "added" for _s, change in by[repo.shas["fixed"]])
    assert len(by[repo.shas["fixed"]]) == 10
