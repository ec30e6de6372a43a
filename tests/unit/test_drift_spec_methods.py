"""Drift checks an endpoint reference against an OpenAPI spec's operations with their
HTTP method: a route only a spec has is found only for a method the spec gives it."""
from __future__ import annotations

from helpers.gitrepo import head_sha, make_git_repo

SPEC = """openapi: 3.0.3
info:
  title: Refunds API
  version: 1.0.0
paths:
  /v1/refunds/{id}:
    get:
      summary: Get a refund
      responses:
        '200':
          description: The refund
{delete}  /v1/payments/{id}:
    get:
      summary: Get a payment
      responses:
        '200':
          description: The payment
"""
DELETE = """    delete:
      summary: Cancel a refund
      responses:
        '204':
          description: Cancelled
"""


def _lookup(tmp_path, files: dict[str, str], *refs: str) -> dict:
    from indexer.drift.codeindex import build_code_index
    from indexer.drift.extract import Reference, normalize_route
    from indexer.drift.resolve import lookup

    root = make_git_repo(tmp_path, files, name="refunds")
    idx = build_code_index("refunds", root, head_sha(root))
    out = {}
    for ref in refs:
        method, route = ref.split(" ", 1)
        out[ref] = lookup(Reference("endpoint", ref, f"{method} {normalize_route(route)}", 1), [idx])
    return out


def test_a_method_the_spec_has_is_ok_at_its_operation_line(tmp_path):
    spec = SPEC.replace("{delete}", DELETE)
    found = _lookup(tmp_path, {"api/openapi.yaml": spec}, "DELETE /v1/refunds/{id}", "GET /v1/refunds/{id}")
    lines = spec.split("\n")
    assert found["DELETE /v1/refunds/{id}"].status == "ok"
    line = int(found["DELETE /v1/refunds/{id}"].evidence.split(":")[1].split("@")[0])
    assert lines[line - 1] == "    delete:"
    assert found["GET /v1/refunds/{id}"].status == "ok"
    assert lines[int(found["GET /v1/refunds/{id}"].evidence.split(":")[1].split("@")[0]) - 1] == "    get:"


def test_a_method_the_spec_lacks_is_missing_naming_the_methods_it_has(tmp_path):
    found = _lookup(tmp_path, {"api/openapi.yaml": SPEC.replace("{delete}", "")},
                    "DELETE /v1/refunds/{id}", "GET /v1/refunds/{id}", "POST /v1/payments/{id}")
    assert (found["DELETE /v1/refunds/{id}"].status, found["DELETE /v1/refunds/{id}"].note) == (
        "missing", "the spec has GET, not DELETE")
    assert found["GET /v1/refunds/{id}"].status == "ok"
    assert (found["POST /v1/payments/{id}"].status, found["POST /v1/payments/{id}"].note) == (
        "missing", "the spec has GET, not POST")


def test_a_route_the_code_also_has_is_ok_whatever_the_method(tmp_path):
    found = _lookup(tmp_path, {"api/openapi.yaml": SPEC.replace("{delete}", ""),
                               "refunds/app.py": 'ROUTES = ["/v1/refunds/{refund_id}"]\n'},
                    "DELETE /v1/refunds/{id}", "POST /v1/payments/{id}")
    assert found["DELETE /v1/refunds/{id}"].status == "ok"  # code routes carry no method
    assert found["POST /v1/payments/{id}"].status == "missing"  # that route is the spec's only


def test_a_json_specs_own_strings_are_not_code(tmp_path):
    import json

    spec = {"openapi": "3.0.3", "info": {"title": "Refunds", "version": "1"},
            "paths": {"/v1/refunds/{id}": {"get": {"responses": {"200": {"description": "ok"}}}}}}
    found = _lookup(tmp_path, {"api/openapi.json": json.dumps(spec, indent=2)}, "DELETE /v1/refunds/{id}")
    assert (found["DELETE /v1/refunds/{id}"].status, found["DELETE /v1/refunds/{id}"].note) == (
        "missing", "the spec has GET, not DELETE")


def test_a_router_prefix_still_finds_a_spec_route_with_its_method(tmp_path):
    spec = SPEC.replace("{delete}", DELETE)
    found = _lookup(tmp_path, {"api/openapi.yaml": spec}, "DELETE /api/v1/refunds/{id}", "PUT /api/v1/refunds/{id}")
    assert (found["DELETE /api/v1/refunds/{id}"].status, found["DELETE /api/v1/refunds/{id}"].note) == (
        "ok", "under a router prefix")
    assert (found["PUT /api/v1/refunds/{id}"].status, found["PUT /api/v1/refunds/{id}"].note) == (
        "missing", "the spec has DELETE, GET, not PUT")
