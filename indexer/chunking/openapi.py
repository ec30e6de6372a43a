"""OpenAPI (3.x) and Swagger (2.0) specs as first-class documents: one chunk per operation.

A YAML or JSON file whose top level has ``openapi: 3…`` or ``swagger: "2.0"`` is split
into one ``api_operation`` chunk per operation (``paths./orders/{id}.get``): ``symbol``
is ``GET /orders/{id}``, ``text`` the operation's own source lines, and ``context`` a
one-line head carrying the spec's ``info.version`` (``OpenAPI operation GET /orders/{id}
(openapi.yaml, spec 3.2.1)``) then the summary, description, parameters, request body
and responses with their schemas resolved one level (a ``$ref`` to a component becomes
its properties and their types). The spec version thus reaches every answer citing it.

A file that declares itself a spec but does not parse (or has no operations) is not
split: :func:`chunk_openapi` raises :class:`MalformedSpec` and :func:`indexer.chunking.chunk_file`
logs a warning and falls back to line windows.
"""
from __future__ import annotations

import posixpath
import re

from .models import Chunk
from .windows import slice_text, split_lines

KIND_API_OPERATION = "api_operation"
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
#: A top-level ``openapi: 3.1.0`` / ``swagger: "2.0"`` (YAML) or ``"openapi": "3.0.3"`` (JSON).
_DECLARES = re.compile(r'^\s{0,4}["\']?(openapi|swagger)["\']?\s*:\s*["\']?\d', re.MULTILINE)
_MAX_PROPS = 12


class MalformedSpec(ValueError):
    """A file that declares itself an OpenAPI/Swagger spec but cannot be split."""


def looks_like_openapi(path: str, text: str) -> bool:
    """True for a ``.yaml``/``.yml``/``.json`` file declaring ``openapi`` or ``swagger``
    near its top (the first 4 KB)."""
    return path.lower().endswith((".yaml", ".yml", ".json")) and bool(_DECLARES.search(text[:4096]))


def _mapping_items(node):
    import yaml

    return node.value if isinstance(node, yaml.MappingNode) else []


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _resolve(spec: dict, value):
    """``value`` with a top-level ``$ref`` (``#/components/schemas/Order``) replaced by its target."""
    if isinstance(value, dict) and isinstance(value.get("$ref"), str) and value["$ref"].startswith("#/"):
        target = spec
        for part in value["$ref"][2:].split("/"):
            target = target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, dict) else None
        return target if isinstance(target, dict) else value
    return value


def _schema_text(spec: dict, schema) -> str:
    """A schema in one line, resolved one level: ``Order {id: string, total: number, items: array}``."""
    if not isinstance(schema, dict):
        return ""
    name = _ref_name(schema["$ref"]) if isinstance(schema.get("$ref"), str) else ""
    resolved = _resolve(spec, schema)
    if resolved.get("type") == "array" and isinstance(resolved.get("items"), dict):
        items = resolved["items"]
        inner = _ref_name(items["$ref"]) if isinstance(items.get("$ref"), str) else items.get("type", "")
        return f"{name + ' ' if name else ''}array of {inner}".strip()
    props = resolved.get("properties") if isinstance(resolved.get("properties"), dict) else {}
    fields = []
    for key, prop in list(props.items())[:_MAX_PROPS]:
        prop = prop if isinstance(prop, dict) else {}
        kind = _ref_name(prop["$ref"]) if isinstance(prop.get("$ref"), str) else prop.get("type", "")
        fields.append(f"{key}: {kind}" if kind else str(key))
    body = "{" + ", ".join(fields) + "}" if fields else str(resolved.get("type", ""))
    return " ".join(x for x in (name, body) if x)


def _params_text(spec: dict, params) -> str:
    out = []
    for p in params if isinstance(params, list) else []:
        p = _resolve(spec, p)
        if not isinstance(p, dict) or "name" not in p:
            continue
        kind = p.get("type") or (p.get("schema") or {}).get("type", "") if isinstance(p.get("schema", {}), dict) else ""
        req = " required" if p.get("required") else ""
        out.append(f"{p['name']} ({p.get('in', '')}{', ' + kind if kind else ''}{req})")
    return ", ".join(out)


def _body_text(spec: dict, op: dict, swagger: bool, params) -> str:
    if swagger:
        for p in params if isinstance(params, list) else []:
            p = _resolve(spec, p)
            if isinstance(p, dict) and p.get("in") == "body":
                return _schema_text(spec, p.get("schema"))
        return ""
    body = _resolve(spec, op.get("requestBody"))
    content = body.get("content") if isinstance(body, dict) else None
    if isinstance(content, dict):
        for media in content.values():
            if isinstance(media, dict) and media.get("schema"):
                return _schema_text(spec, media["schema"])
    return ""


def _responses_text(spec: dict, responses, swagger: bool) -> str:
    out = []
    for status, resp in (responses.items() if isinstance(responses, dict) else []):
        resp = _resolve(spec, resp)
        if not isinstance(resp, dict):
            continue
        schema = resp.get("schema") if swagger else next(
            (m.get("schema") for m in (resp.get("content") or {}).values() if isinstance(m, dict) and m.get("schema")),
            None) if isinstance(resp.get("content"), dict) else None
        desc = str(resp.get("description", "")).strip().splitlines()[0] if resp.get("description") else ""
        what = _schema_text(spec, schema) if schema else ""
        out.append(f"{status}: " + " – ".join(x for x in (desc, what) if x))
    return "; ".join(out)


def _end_line(lines: list[str], mark, start: int) -> int:
    """Last 1-based line of a node whose end ``mark`` may sit before the next key (only
    indentation before it on its line: the node ended on an earlier line); trailing blank
    lines are left out."""
    row = mark.line  # 0-based
    before = lines[row][:mark.column] if row < len(lines) else ""
    end = row if not before.strip() else row + 1
    end = min(max(end, start), len(lines))
    while end > start and not lines[end - 1].strip():
        end -= 1
    return end


def chunk_openapi(path: str, language: str, text: str) -> list[Chunk]:
    """One ``api_operation`` chunk per operation of the spec ``text`` (sorted by line).
    Raises :class:`MalformedSpec` when it does not parse or has no operations."""
    import yaml

    try:
        spec = yaml.safe_load(text)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise MalformedSpec(f"does not parse: {str(exc).splitlines()[0]}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("paths"), dict):
        raise MalformedSpec("no paths object")
    swagger = "swagger" in spec and "openapi" not in spec
    info = spec.get("info") if isinstance(spec.get("info"), dict) else {}
    version = str(info.get("version", "")).strip() or "unversioned"
    title = str(info.get("title", "")).strip()
    fmt = f"Swagger {spec.get('swagger')}" if swagger else f"OpenAPI {spec.get('openapi')}"
    name = posixpath.basename(path)
    lines = split_lines(text)
    paths_node = next((v for k, v in _mapping_items(root) if k.value == "paths"), None)
    chunks: list[Chunk] = []
    for path_key, path_node in _mapping_items(paths_node):
        api_path = str(path_key.value)
        item = spec["paths"].get(api_path)
        if not isinstance(item, dict):
            continue
        shared = item.get("parameters") or []
        for method_key, op_node in _mapping_items(path_node):
            method = str(method_key.value).lower()
            op = item.get(method_key.value)
            if method not in METHODS or not isinstance(op, dict):
                continue
            start = method_key.start_mark.line + 1
            end = _end_line(lines, op_node.end_mark, start)
            params = [*shared, *(op.get("parameters") or [])] if isinstance(op.get("parameters") or [], list) else shared
            symbol = f"{method.upper()} {api_path}"
            summary = str(op.get("summary", "")).strip()
            head = f"OpenAPI operation {symbol} ({name}, spec {version})"
            parts = [head + (f": {summary}" if summary else ""),
                     f"api: {title} {version} ({fmt})" if title else f"api: {fmt}"]
            if op.get("operationId"):
                parts.append(f"operationId: {op['operationId']}")
            if op.get("description"):
                parts.append("description: " + " ".join(str(op["description"]).split())[:500])
            for label, value in (("parameters", _params_text(spec, params)),
                                 ("request", _body_text(spec, op, swagger, params)),
                                 ("responses", _responses_text(spec, op.get("responses"), swagger))):
                if value:
                    parts.append(f"{label}: {value}")
            chunks.append(Chunk(path, language, KIND_API_OPERATION, symbol, start, end, slice_text(lines, start, end),
                                context="\n".join(parts), signature=symbol, docstring=summary,
                                extra={"spec_version": version, "spec_format": fmt, "method": method.upper(),
                                       "api_path": api_path}))
    if not chunks:
        raise MalformedSpec("no operations")
    return sorted(chunks, key=lambda c: (c.start_line, c.symbol))
