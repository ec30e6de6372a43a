"""OpenAPI/Swagger specs are split one chunk per operation, carrying the spec's version;
a malformed spec falls back to line windows with a warning."""
from __future__ import annotations

import logging

from helpers.openapi_spec import MALFORMED_YAML, OPERATIONS, SPEC_YAML, SWAGGER_JSON
from indexer.chunking import chunk_file
from indexer.chunking.openapi import KIND_API_OPERATION, looks_like_openapi


def test_each_of_ten_operations_is_one_chunk_with_method_path_and_spec_version():
    chunks = chunk_file("api/openapi.yaml", SPEC_YAML)
    assert [c.kind for c in chunks] == [KIND_API_OPERATION] * 10
    assert sorted(c.symbol for c in chunks) == sorted(s for s, _ in OPERATIONS)
    lines = SPEC_YAML.split("\n")
    for c in chunks:
        method, path = c.symbol.split(" ")
        assert c.context.startswith(f"OpenAPI operation {c.symbol} (openapi.yaml, spec 3.2.1)")
        assert c.extra["spec_version"] == "3.2.1"
        assert lines[c.start_line - 1].strip() == f"{method.lower()}:"  # the operation's own lines
        assert c.text == "\n".join(lines[c.start_line - 1:c.end_line])
    ends = sorted((c.start_line, c.end_line) for c in chunks)
    assert all(a[1] < b[0] for a, b in zip(ends, ends[1:]))  # no operation swallows the next


def test_schemas_parameters_and_request_bodies_are_resolved_one_level():
    by = {c.symbol: c for c in chunk_file("openapi.yaml", SPEC_YAML)}
    get = by["GET /orders/{id}"].context
    assert "parameters: id (path, string required)" in get  # path-level parameters apply
    assert "200: The order – Order {id: string, total: number, items: array}" in get
    assert "404: No such order" in get
    assert "request: NewOrder {cart_id: string, coupon: string}" in by["POST /orders"].context
    assert "parameters: page (query, integer)" in by["GET /orders"].context  # a $ref parameter
    assert "array of Order" in by["GET /orders"].context


def test_swagger_2_json_is_split_too():
    chunks = chunk_file("legacy/swagger.json", SWAGGER_JSON)
    by = {c.symbol: c for c in chunks}
    assert set(by) == {"GET /invoices/{id}", "POST /invoices"}
    assert by["GET /invoices/{id}"].context.startswith("OpenAPI operation GET /invoices/{id} (swagger.json, spec 1.4.0)")
    assert "Invoice {number: string, amount: number}" in by["GET /invoices/{id}"].context
    assert "request: Invoice {number: string, amount: number}" in by["POST /invoices"].context


def test_a_malformed_spec_is_windowed_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="indexer.chunking"):
        chunks = chunk_file("api/openapi.yaml", MALFORMED_YAML)
    assert [c.kind for c in chunks] == ["file"]
    assert chunks[0].text.startswith("openapi: 3.0.3")
    assert any("api/openapi.yaml: OpenAPI spec not split by operation" in r.getMessage() for r in caplog.records)


def test_only_specs_are_detected():
    assert looks_like_openapi("openapi.yaml", SPEC_YAML) and looks_like_openapi("x.json", SWAGGER_JSON)
    assert not looks_like_openapi("config.yaml", "server:\n  port: 8080\n")
    assert not looks_like_openapi("notes.md", SPEC_YAML)
    assert [c.kind for c in chunk_file("deploy/values.yaml", "replicas: 3\nimage: shop\n")] == ["file"]
