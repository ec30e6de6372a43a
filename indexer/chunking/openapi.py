"""OpenAPI (3.x) and Swagger (2.0) specs as first-class documents: one chunk per operation.

A YAML or JSON file whose top level has ``openapi: 3…`` or ``swagger: "2.0"`` is split
into one ``api_operation`` chunk per operation (``paths./orders/{id}.get``): ``symbol``
is ``GET /orders/{id}``, ``text`` the operation's own source lines, and ``context`` a
one-line head carrying the spec's ``info.version`` (``OpenAPI operation GET /orders/{id}
(openapi.yaml, spec 3.2.1)``) then the summary, description, parameters, request body
and responses with their schemas resolved one level (a ``$ref`` to a component becomes
its properties and their types). The spec version thus reaches every answer citing it.

An operation's ``operationId`` is kept in ``extra["operation_id"]``: the index makes it
the chunk's other name (:func:`indexer.documents.chunk_alias`), searchable and matched like
a symbol, so "what does getPet do?" finds ``GET /pets/{id}``.

A file that declares itself a spec but does not parse, is not shaped like one (``paths``
not a mapping, an operation that is a list or a string…) or has no operations is not
split: :func:`chunk_openapi` raises :class:`MalformedSpec` and
:func:`indexer.chunking.chunk_file` logs a warning and falls back to line windows marked
``extra["syntax_errors"]`` (counted in the run's ``parse_warnings``).
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


_HEAD_SUMMARY = re.compile(r"^OpenAPI operation \S+ \S+ \([^()\n]+, spec [^()\n]*\)(?::\s*(.*))?$")
_OPERATION_ID = re.compile(r"^operationId: (\S+)$", re.MULTILINE)


def operation_names(content: str) -> tuple[str, str]:
    """``(operationId, summary)`` of a stored operation chunk's content (its context lines
    then its source), as :func:`chunk_openapi` wrote them; ``""`` for what it lacks. Lets a
    chunk rebuilt from the index be embedded as it was indexed."""
    head = content.split("\n", 1)[0]
    m = _HEAD_SUMMARY.match(head)
    op = _OPERATION_ID.search(content)  # at the start of a line: a context line, never the indented source
    return (op.group(1) if op else ""), ((m.group(1) or "").strip() if m else "")


def _check_structure(spec) -> None:
    """Raise :class:`MalformedSpec` naming the first place where ``spec`` (parsed YAML or
    JSON) is not shaped like a spec: ``paths`` not a mapping, a path item not a mapping, an
    operation (``get``, ``post``…) not a mapping, or its ``parameters`` not a list. A
    document that parses but is built wrong is no more splittable than one that does not
    parse, and is reported the same way."""
    if not isinstance(spec, dict):
        raise MalformedSpec("the document is not a mapping")
    paths = spec.get("paths")
    if not isinstance(paths, dict):
        raise MalformedSpec("no paths object" if paths is None else f"paths is a {_type_name(paths)}, not a mapping")
    for api_path, item in paths.items():
        if not isinstance(item, dict):
            raise MalformedSpec(f"path {api_path} is a {_type_name(item)}, not a mapping")
        if not isinstance(item.get("parameters", []), list):
            raise MalformedSpec(f"the parameters of path {api_path} are not a list")
        for method, op in item.items():
            if str(method).lower() not in METHODS:
                continue
            if not isinstance(op, dict):
                raise MalformedSpec(f"operation {str(method).upper()} {api_path} is a {_type_name(op)}, not a mapping")
            if not isinstance(op.get("parameters", []), list):
                raise MalformedSpec(f"the parameters of {str(method).upper()} {api_path} are not a list")


def _type_name(value) -> str:
    """What a YAML/JSON value is, in a user's words: ``list``, ``string``, ``number``…"""
    if value is None:
        return "null"
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value),
                                                                                          type(value).__name__)


def chunk_openapi(path: str, language: str, text: str) -> list[Chunk]:
    """One ``api_operation`` chunk per operation of the spec ``text`` (sorted by line).
    Raises :class:`MalformedSpec` when it does not parse or has no operations."""
    import yaml

    try:
        spec = yaml.safe_load(text)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise MalformedSpec(f"does not parse: {str(exc).splitlines()[0]}") from None
    _check_structure(spec)
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
        shared = item.get("parameters") or []
        for method_key, op_node in _mapping_items(path_node):
            method = str(method_key.value).lower()
            op = item.get(method_key.value)
            if method not in METHODS:
                continue
            start = method_key.start_mark.line + 1
            end = _end_line(lines, op_node.end_mark, start)
            params = [*shared, *(op.get("parameters") or [])]
            symbol = f"{method.upper()} {api_path}"
            summary = str(op.get("summary", "")).strip()
            head = f"OpenAPI operation {symbol} ({name}, spec {version})"
            op_id = str(op.get("operationId") or "").strip()
            parts = [head + (f": {summary}" if summary else ""), *([f"operationId: {op_id}"] if op_id else []),
                     f"api: {title} {version} ({fmt})" if title else f"api: {fmt}"]
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
                                       "api_path": api_path, **({"operation_id": op_id} if op_id else {})}))
    if not chunks:
        raise MalformedSpec("no operations")
    return sorted(chunks, key=lambda c: (c.start_line, c.symbol))
