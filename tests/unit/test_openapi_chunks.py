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


STRUCTURE_ERRORS = {
    "paths is a list, not a mapping": "openapi: 3.0.3\ninfo:\n  title: Shop API\n  version: 3.2.1\npaths:\n"
                                      "  - path: /orders\n    get:\n      summary: List orders\n",
    "operation GET /health is a list, not a mapping":
        SPEC_YAML.replace("  /health:\n    get:\n", "  /health:\n    get: [probe, healthy]\n    x-get:\n"),
    "operation DELETE /orders/{id} is a string, not a mapping":
        SPEC_YAML.replace("    delete:\n      summary: Cancel an order\n", "    delete: cancel it\n    x-was:\n      summary: Cancel an order\n"),
    "path /health is a string, not a mapping": SPEC_YAML.replace("  /health:\n    get:", "  /health: up\n  /x-health:\n    get:"),
    "the parameters of GET /customers/{id} are not a list":
        SPEC_YAML.replace("      parameters:\n        - name: id\n          in: path\n          required: true\n          schema:\n            type: string\n      responses:\n        '200':\n          description: The customer",
                          "      parameters: id\n      responses:\n        '200':\n          description: The customer"),
}


def test_a_spec_that_parses_but_is_built_wrong_is_windowed_with_a_warning(caplog):
    import yaml

    for reason, text in STRUCTURE_ERRORS.items():
        assert text != SPEC_YAML and isinstance(yaml.safe_load(text), dict), reason  # valid YAML
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="indexer.chunking"):
            chunks = chunk_file("api/openapi.yaml", text)
        assert chunks and all(c.kind in ("window", "file") for c in chunks), (reason, [c.kind for c in chunks])
        assert all(c.extra.get("syntax_errors") for c in chunks)  # counted in the run's parse_warnings
        messages = [r.getMessage() for r in caplog.records]
        assert any("api/openapi.yaml: OpenAPI spec not split by operation" in m and reason in m for m in messages), \
            (reason, messages)


def test_a_malformed_spec_is_counted_as_a_parse_warning():
    assert all(c.extra.get("syntax_errors") for c in chunk_file("api/openapi.yaml", MALFORMED_YAML))
    assert not any(c.extra.get("syntax_errors") for c in chunk_file("api/openapi.yaml", SPEC_YAML))


def test_the_operation_id_is_the_chunks_other_name():
    from datetime import datetime, timezone

    from indexer.documents import chunk_properties, embedding_text

    text = SPEC_YAML.replace("    get:\n      summary: Get an order\n", "    get:\n      summary: Get an order\n      operationId: getOrderById\n")
    by = {c.symbol: c for c in chunk_file("api/openapi.yaml", text)}
    op = by["GET /orders/{id}"]
    assert op.extra["operation_id"] == "getOrderById" and "operationId: getOrderById" in op.context
    props = chunk_properties(op, repo="shop", commit="abc", indexed_at=datetime.now(timezone.utc), run_id="r")
    assert props["name_lower"] == "getorderbyid"  # the exact-name match of a question naming it
    assert props["symbol_terms"] == "get orders id get order by id"
    assert embedding_text(op).startswith("get orders id get order by id getOrderById - api/openapi.yaml\n")
    plain = chunk_properties(by["GET /orders"], repo="shop", commit="abc", indexed_at=datetime.now(timezone.utc),
                             run_id="r")
    assert "operation_id" not in by["GET /orders"].extra and plain["symbol_terms"] == "get orders"
    # a first index embeds from the stored properties: the same inputs as from the chunk
    from indexer.documents import embedding_texts
    from indexer.store.versions import chunk_from_properties

    assert embedding_texts(op)[1] == "operation getOrderById: Get an order"
    assert embedding_texts(chunk_from_properties(props)) == embedding_texts(op)
    assert embedding_texts(chunk_from_properties(plain)) == embedding_texts(by["GET /orders"])


def test_only_specs_are_detected():
    assert looks_like_openapi("openapi.yaml", SPEC_YAML) and looks_like_openapi("x.json", SWAGGER_JSON)
    assert not looks_like_openapi("config.yaml", "server:\n  port: 8080\n")
    assert not looks_like_openapi("notes.md", SPEC_YAML)
    assert [c.kind for c in chunk_file("deploy/values.yaml", "replicas: 3\nimage: shop\n")] == ["file"]
