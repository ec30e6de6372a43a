"""Per-file call-graph facts: definitions, call sites and imports of ONE file.

Everything here is extracted from a single file without looking at any other
file; :mod:`indexer.graph.resolve` links the facts of a whole repository.
All dataclasses are JSON-serialisable through ``to_dict``/``from_dict`` so that
facts can be cached per file (keyed by content hash) and resolved later.

Symbols follow the code chunker's dotted names (``indexer.chunking.code``):
Python ``Class.method`` / ``Outer.Inner.m``, Go ``Receiver.Method`` and ``Name``,
Java ``Class.method``, TS/JS ``Class.method`` and ``fn``.
"""
from __future__ import annotations

import importlib
import logging
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from indexer.chunking.languages import detect_language

log = logging.getLogger(__name__)

KIND_FUNCTION, KIND_METHOD, KIND_CLASS = "function", "method", "class"

# Receiver kinds (see Receiver).
R_SELF = "self"        # self / this / cls / the Go receiver variable
R_SUPER = "super"      # super() / super
R_TYPE = "type"        # a value whose declared type expression is known
R_CALL = "call"        # the result of a call (`x = f()` then `x.m()`, or `f().m()`)
R_MODULE = "module"    # an imported module / alias / Go package name
R_NAME = "name"        # no receiver: a plain call `foo()`
R_IDENT = "ident"      # a bare identifier with no local information (global, field, class)
R_UNKNOWN = "unknown"  # anything else (literals, untyped locals)
# Pseudo attributes in Receiver.attrs: an element of a container.
ELEM_INDEX = "[]"     # x[i]  (Go: also the value of `for _, v := range x`)
ELEM_ITER = "[iter]"  # for v in x / for (const v of x)


@dataclass
class Receiver:
    """Static description of a value expression (a call's receiver, a variable, a field).

    ``kind`` is one of the ``R_*`` constants. ``name`` is the base identifier as
    written (``self``, ``r``, ``os``); ``type`` is the enclosing class symbol for
    ``self``/``super`` or the declared type expression as written for ``type``
    (``Response``, ``*Context``, ``Optional[models.Response]``); ``value`` is the
    inner call for ``call``; ``index`` picks one result of a multi-value call (Go
    ``a, err := f()``); ``attrs`` is the attribute path applied after the base
    (``r.request.copy()`` -> base ``r``, attrs ``["request"]``).
    """

    kind: str
    name: str = ""
    type: str = ""
    attrs: list[str] = field(default_factory=list)
    value: CallRef | None = None
    index: int = 0
    #: The values a literal container holds (``{"a": f}``, ``[f, g]``), where they may be
    #: functions: what calling one of its elements can call.
    elems: list["Receiver"] = field(default_factory=list)

    def with_attr(self, attr: str) -> "Receiver":
        """A copy with ``attr`` appended to the attribute path."""
        return Receiver(self.kind, self.name, self.type, self.attrs + [attr], self.value, self.index,
                        list(self.elems))

    def without_last_attr(self) -> "Receiver":
        """A copy without the last attribute (``self.x.y`` -> ``self.x``)."""
        return Receiver(self.kind, self.name, self.type, self.attrs[:-1], self.value, self.index,
                        list(self.elems))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind}
        if self.name:
            d["name"] = self.name
        if self.type:
            d["type"] = self.type
        if self.attrs:
            d["attrs"] = list(self.attrs)
        if self.value is not None:
            d["value"] = self.value.to_dict()
        if self.index:
            d["index"] = self.index
        if self.elems:
            d["elems"] = [e.to_dict() for e in self.elems]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Receiver":
        value = d.get("value")
        return cls(d["kind"], d.get("name", ""), d.get("type", ""), list(d.get("attrs", [])),
                   CallRef.from_dict(value) if value else None, d.get("index", 0),
                   [Receiver.from_dict(e) for e in d.get("elems", [])])


#: How a call happens when it is not written as one (``CallRef.implicit``).
IMPLICIT_DECORATOR = "decorator"  # @dec above a definition: the definition calls dec
IMPLICIT_PROTOCOL = "protocol"    # for/with: __iter__, __enter__, __exit__


@dataclass
class CallRef:
    """A called expression: ``callee_name`` (last identifier), its text, its receiver.

    ``through``: the receiver *is* the called value (``a()`` with ``a = f``,
    ``handlers["x"]()``, ``make()()``), not the object ``callee_name`` is looked up on.
    ``args``/``kwargs``: what is known of the arguments that may be functions (a name,
    an attribute, a call, a container literal; ``None`` for the rest), so a parameter
    called inside the callee can be followed to the function passed in.
    ``implicit``: :data:`IMPLICIT_DECORATOR` or :data:`IMPLICIT_PROTOCOL` for calls the
    language makes without call syntax.
    """

    callee_name: str
    callee_text: str
    receiver: Receiver
    new: bool = False  # `new Foo()` (Java/TS/JS): constructs callee_name
    through: bool = False
    args: list[Receiver | None] = field(default_factory=list)
    kwargs: dict[str, Receiver] = field(default_factory=dict)
    implicit: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = {"callee_name": self.callee_name, "callee_text": self.callee_text,
             "receiver": self.receiver.to_dict()}
        if self.new:
            d["new"] = True
        if self.through:
            d["through"] = True
        if any(a is not None for a in self.args):
            d["args"] = [a.to_dict() if a is not None else None for a in self.args]
        if self.kwargs:
            d["kwargs"] = {k: v.to_dict() for k, v in self.kwargs.items()}
        if self.implicit:
            d["implicit"] = self.implicit
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CallRef":
        return cls(d["callee_name"], d.get("callee_text", ""), Receiver.from_dict(d["receiver"]),
                   d.get("new", False), d.get("through", False),
                   [Receiver.from_dict(a) if a else None for a in d.get("args", [])],
                   {k: Receiver.from_dict(v) for k, v in d.get("kwargs", {}).items()}, d.get("implicit", ""))


@dataclass
class Definition:
    """A function, method or class (Go: any named type) defined in the file.

    ``bases`` are raw base-class expressions (Go: embedded struct fields; Java/TS:
    extends and implements). ``attributes`` maps field names to what is known of
    their values (usually a ``type`` receiver with the declared type). ``returns``
    is the declared return type expression (Go: the whole result list).
    ``caller_symbol`` differs from ``symbol`` for functions nested in functions:
    calls inside them are attributed to the enclosing chunk-visible definition.
    """

    symbol: str
    name: str
    kind: str
    start_line: int
    end_line: int
    class_symbol: str = ""
    bases: list[str] = field(default_factory=list)
    attributes: dict[str, Receiver] = field(default_factory=dict)
    returns: str = ""
    caller_symbol: str = ""
    static: bool = False
    #: Parameter names in order (without ``self``/``cls`` of a method): an argument
    #: passed at position i (or by that name) is what the parameter holds.
    params: list[str] = field(default_factory=list)
    #: What ``return`` statements give back, where it may be a function (``return f``,
    #: ``return self.m``): what ``make()()`` calls.
    return_values: list[Receiver] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["attributes"] = {k: v.to_dict() for k, v in self.attributes.items()}
        d["return_values"] = [r.to_dict() for r in self.return_values]
        if not d["params"]:
            del d["params"]
        if not d["return_values"]:
            del d["return_values"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Definition":
        d = dict(d)
        d["attributes"] = {k: Receiver.from_dict(v) for k, v in d.get("attributes", {}).items()}
        d["bases"] = list(d.get("bases", []))
        d["params"] = list(d.get("params", []))
        d["return_values"] = [Receiver.from_dict(r) for r in d.get("return_values", [])]
        return cls(**d)


@dataclass
class CallSite:
    """One call (or ``new``) expression.

    ``caller_symbol`` is the enclosing chunk-visible definition ("" at module level);
    ``callee_name`` the last identifier of the called expression; ``callee_text`` the
    expression as written (``self.request``, ``r.request.copy``, ``binding.Default``).
    """

    caller_symbol: str
    line: int
    callee_name: str
    callee_text: str
    receiver: Receiver
    new: bool = False
    through: bool = False
    args: list[Receiver | None] = field(default_factory=list)
    kwargs: dict[str, Receiver] = field(default_factory=dict)
    implicit: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Caller and line, then the called expression as :meth:`CallRef.to_dict` writes it."""
        return {"caller_symbol": self.caller_symbol, "line": self.line, **self.ref().to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CallSite":
        """The inverse of :meth:`to_dict`."""
        return cls.of(d["caller_symbol"], d["line"], CallRef.from_dict(d))

    @classmethod
    def of(cls, caller_symbol: str, line: int, ref: CallRef) -> "CallSite":
        """The call of ``ref`` by ``caller_symbol`` at ``line``."""
        return cls(caller_symbol, line, ref.callee_name, ref.callee_text, ref.receiver, ref.new, ref.through,
                   list(ref.args), dict(ref.kwargs), ref.implicit)

    def ref(self) -> CallRef:
        """The called expression of this call, without caller and line."""
        return CallRef(self.callee_name, self.callee_text, self.receiver, self.new, self.through,
                       list(self.args), dict(self.kwargs), self.implicit)


@dataclass
class Import:
    """One imported binding.

    ``module``: Python dotted module (``os.path``) or, for relative imports, the
    repo-relative module path (``src/requests/_types``, ``relative=True``); Go import
    path; JS/TS specifier (relative ones resolved against the file: ``src/x``);
    Java package or class (``java.util.List``). ``name``: the imported member ("" for
    whole-module imports, ``*`` for wildcards). ``alias``: the local name bound
    ("" when the binding is the module's own first component, Python ``import a.b``).
    ``scope``: the caller symbol of the function the import statement is in ("" at file
    level): a Python import inside a function binds its name in that function only.
    """

    module: str
    name: str = ""
    alias: str = ""
    line: int = 0
    relative: bool = False
    static: bool = False  # Java `import static`
    scope: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not self.scope:
            d.pop("scope")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Import":
        return cls(**d)

    @property
    def local_name(self) -> str:
        """Name this import binds in the file ("" for wildcards)."""
        if self.alias:
            return self.alias
        if self.name == "*":
            return ""
        if self.name:
            return self.name.split(".")[-1]
        return self.module.split(".")[0]


@dataclass
class FileFacts:
    """All facts of one file. ``package``: Go package name, Java package, Python
    module path (``src/requests/sessions``), JS/TS module path (path without
    extension); for ``go.mod`` files the module path. ``variables`` are module-level
    variables with a known value (``DefaultWriter``, ``_session = Session()``)."""

    path: str
    language: str
    package: str = ""
    definitions: list[Definition] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    variables: dict[str, Receiver] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "language": self.language, "package": self.package,
                "definitions": [d.to_dict() for d in self.definitions],
                "calls": [c.to_dict() for c in self.calls],
                "imports": [i.to_dict() for i in self.imports],
                "variables": {k: v.to_dict() for k, v in self.variables.items()}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FileFacts":
        return cls(d["path"], d["language"], d.get("package", ""),
                   [Definition.from_dict(x) for x in d.get("definitions", [])],
                   [CallSite.from_dict(x) for x in d.get("calls", [])],
                   [Import.from_dict(x) for x in d.get("imports", [])],
                   {k: Receiver.from_dict(v) for k, v in d.get("variables", {}).items()})


# language -> (module of this package, extractor class)
_EXTRACTORS = {
    "python": ("extract_python", "PythonExtractor"), "go": ("extract_go", "GoExtractor"),
    "java": ("extract_java", "JavaExtractor"), "javascript": ("extract_js", "JsExtractor"),
    "typescript": ("extract_js", "JsExtractor"), "tsx": ("extract_js", "JsExtractor"),
    **{lang: ("extract_generic", "GenericExtractor") for lang in (
        "rust", "c", "cpp", "csharp", "kotlin", "swift", "ruby", "php", "scala", "lua", "elixir", "haskell",
        "bash", "zig")},
}


def _go_mod_facts(path: str, text: str) -> FileFacts:
    module = ""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "module":
            module = parts[1].strip('"')
            break
    return FileFacts(path, "go.mod", module)


def extract_file(path: str, text: str) -> FileFacts | None:
    """Facts of one source file, or ``None`` for languages without support.

    ``path`` is repo-relative with ``/`` separators (it names relative imports and
    the Python module path). Supported: Python, Go (and ``go.mod``, whose facts carry
    only the module path), Java, JavaScript, TypeScript, TSX with typed resolution;
    Rust, C, C++, C#, Kotlin, Swift, Ruby, PHP, Scala, Lua, Elixir, Haskell, Bash and
    Zig at name level (:mod:`.extract_generic`). Never raises on broken
    syntax: tree-sitter recovers and the extractor keeps what it can; an internal
    error is logged and yields facts with whatever was collected (or empty facts).
    """
    if os.path.basename(path) == "go.mod":
        return _go_mod_facts(path, text)
    language = detect_language(path)
    spec = _EXTRACTORS.get(language or "")
    if spec is None:
        return None
    module_name, class_name = spec
    cls = getattr(importlib.import_module(f"{__package__}.{module_name}"), class_name)
    extractor = cls(path, language, text)
    try:
        extractor.run()
    except Exception:  # never fail the indexing of a repository on one file
        log.exception("%s: call-graph extraction failed; keeping partial facts", path)
    return extractor.facts
