"""Link the per-file facts of a repository into call edges.

:func:`resolve` turns every :class:`~indexer.graph.facts.CallSite` into one
:class:`Edge` (two for constructor calls: the class and its constructor). The
static evaluation works on a handful of value kinds:

* ``("mod", key)``   a Python module path, ``go:<dir>`` package, JS module or Java package;
* ``("cls", def)``   a class (or Go named type) itself;
* ``("inst", def)``  an instance of a repository class;
* ``("fn", def)``    a function or method;
* ``("ext", name)``  something outside the repository (stdlib, third party, builtins);
* ``None``           unknown.

Receivers are evaluated in the caller's file (imports, module variables, Go
package, Java package) and attribute chains walk class attribute types, declared
return types and base classes (Python MRO order, Go embedded structs, Java/TS
extends/implements). Nothing is guessed by name here: unresolvable calls stay
``resolved=False`` and :mod:`indexer.graph.query` decides about name matching.
"""
from __future__ import annotations

import builtins
import json
import logging
import posixpath
import re
from collections import defaultdict
from dataclasses import asdict, dataclass

from .facts import (
    ELEM_INDEX, ELEM_ITER, IMPLICIT_DECORATOR, IMPLICIT_PROTOCOL, KIND_CLASS, R_CALL, R_IDENT, R_MODULE, R_NAME,
    R_SELF, R_SUPER, R_TYPE, R_UNKNOWN, CallRef, CallSite, Definition, FileFacts, Import, Receiver,
)
from .types import BUILTIN_TYPES, GO_BUILTINS, JAVA_LANG, JS_GLOBALS, container_elements, go_results, split_type

log = logging.getLogger(__name__)

PY_BUILTINS = frozenset(dir(builtins))
_JS_LANGS = ("javascript", "typescript", "tsx")
_JS_EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_MAX_DEPTH = 40

# Edge rules.
RULE_LOCAL, RULE_IMPORT, RULE_MODULE, RULE_PACKAGE = "local", "import", "module", "package"
RULE_SELF, RULE_INHERITED, RULE_SUPER, RULE_TYPED = "self", "inherited", "super", "typed"
RULE_ATTR_CHAIN, RULE_CONSTRUCTOR, RULE_NESTED = "attr-chain", "constructor", "nested"
RULE_EXTERNAL, RULE_UNRESOLVED, RULE_DYNAMIC = "external", "unresolved", "dynamic"
# Calls of values: through an alias, a container element, a returned function, a bound
# method stored in an attribute, functools.partial (``value``); through a parameter the
# callers passed a function in (``callback``); the decorator of a definition (``decorator``).
RULE_VALUE, RULE_CALLBACK, RULE_DECORATOR = "value", "callback", "decorator"
_MAX_VALUE_DEPTH = 8
# A member call (``x.update()``) whose receiver could not be evaluated, in a language with
# a real resolver: name matching it would make every ``dict.update`` a caller of a
# function ``update``, so it is only ever a *possible* caller.
RULE_RECEIVER_UNKNOWN = "receiver-unknown"

_ELEMENT_GETTERS = frozenset({"get", "pop", "setdefault"})  # `d.get(k)` is an element of d
_WRAPPERS = frozenset({"partial", "staticmethod", "classmethod"})  # calling the result calls arg 0
# builtins that call a function argument before returning: positional 0 (those in
# _FUNCTION_FIRST) or the `key=` keyword
_HIGHER_ORDER = frozenset({"map", "filter", "reduce", "sorted", "min", "max", "sort", "nlargest",
                           "nsmallest", "groupby"})
_FUNCTION_FIRST = frozenset({"map", "filter", "reduce"})
#: Languages whose receivers are evaluated (types, imports): an unresolved member call
#: there means "receiver unknown", not "name-level language".
RESOLVED_LANGUAGES = frozenset({"python", "go", "java", "javascript", "typescript", "tsx"})


@dataclass
class Edge:
    """One call from ``caller_symbol`` ("" = module level) at ``line`` of ``caller_path``.

    Resolved edges name the callee definition (``callee_path``, ``callee_symbol``);
    unresolved ones keep ``callee_name`` only. ``rule`` says how it was decided:
    ``local``, ``import``, ``module``, ``package``, ``self``, ``inherited``, ``super``,
    ``typed``, ``attr-chain``, ``constructor``, ``nested`` (resolved); ``external``
    (clearly outside the repo: never name-matched), ``dynamic`` (calling a local
    variable: never name-matched), ``unresolved``.
    """

    caller_path: str
    caller_symbol: str
    line: int
    callee_path: str
    callee_symbol: str
    callee_name: str
    resolved: bool
    rule: str

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Edge":
        return cls(**d)


Key = tuple  # (path, symbol)


class _Ctx:
    __slots__ = ("path", "cls", "caller")

    def __init__(self, path: str, cls: Key | None, caller: str = ""):
        self.path, self.cls, self.caller = path, cls, caller


class Resolver:
    """Repository-wide indexes plus the static evaluator. Build once, then call
    :meth:`edges` (or use :func:`resolve`)."""

    def __init__(self, all_facts: list[FileFacts]):
        self.files: dict[str, FileFacts] = {}
        self.defs: dict[Key, Definition] = {}
        self.top: dict[str, dict[str, Definition]] = defaultdict(dict)  # path -> name -> def
        self.members: dict[Key, dict[str, Key]] = defaultdict(dict)  # class key -> name -> key
        self.py_modules: dict[str, str] = {}  # module path -> file path
        self.py_packages: set[str] = set()  # dirs holding __init__.py
        self.py_namespace_dirs: set[str] = set()  # dirs holding .py files but no __init__.py (PEP 420)
        self.go_pkg_of: dict[str, str] = {}  # file -> "go:<dir>"
        self.go_pkgs: dict[str, list[str]] = defaultdict(list)  # "go:<dir>" -> files
        self.go_mods: list[tuple[str, str]] = []  # (dir, module path)
        self.java_classes: dict[str, Key] = {}  # fully qualified name -> key
        self.java_pkgs: dict[str, list[Key]] = defaultdict(list)
        self._memo: dict = {}
        self._by_callee_name: dict[str, list[tuple[str, CallSite]]] | None = None
        self._scoped: dict[tuple[str, str, str], tuple[FileFacts, Import]] | None = None
        self._bases_memo: dict[Key, tuple[list[Key], bool]] = {}
        self._depth = 0
        for f in all_facts:
            if f is not None:
                self._add_file(f)
        self._index_members()

    # ---- indexing --------------------------------------------------------------------
    def _add_file(self, f: FileFacts) -> None:
        self.files[f.path] = f
        if f.language == "go.mod":
            self.go_mods.append((posixpath.dirname(f.path), f.package))
            return
        for d in f.definitions:
            self.defs[(f.path, d.symbol)] = d
            if "." not in d.symbol and d.caller_symbol == d.symbol:
                self.top[f.path][d.symbol] = d
        if f.language == "python":
            self.py_modules[f.package] = f.path
            if f.path.endswith(("/__init__.py", "/__init__.pyi")) or f.path in ("__init__.py",):
                self.py_packages.add(posixpath.dirname(f.path))
            d = posixpath.dirname(f.path)
            if d:
                self.py_namespace_dirs.add(d)
        elif f.language == "go":
            pkg = "go:" + posixpath.dirname(f.path)
            if f.package.endswith("_test"):
                pkg += "#test"
            self.go_pkg_of[f.path] = pkg
            self.go_pkgs[pkg].append(f.path)
        elif f.language == "java":
            for d in f.definitions:
                if d.kind == KIND_CLASS and d.caller_symbol == d.symbol:
                    fq = f"{f.package}.{d.symbol}" if f.package else d.symbol
                    self.java_classes[fq] = (f.path, d.symbol)
                    if "." not in d.symbol:
                        self.java_pkgs[f.package].append((f.path, d.symbol))

    def _index_members(self) -> None:
        for (path, sym), d in self.defs.items():
            if "." not in sym and not d.class_symbol:
                continue
            f = self.files[path]
            if f.language == "go" and d.class_symbol:
                owner = self._go_pkg_name(path, d.class_symbol)
                key = owner[1] if owner else (path, d.class_symbol)
                self.members[key][d.name] = (path, sym)
                continue
            parent = sym.rsplit(".", 1)[0] if "." in sym else ""
            if parent and (path, parent) in self.defs and \
                    self.defs[(path, parent)].kind == KIND_CLASS:
                self.members[(path, parent)][d.name] = (path, sym)

    # ---- module lookups --------------------------------------------------------------
    def _py_module(self, dotted: str) -> str | None:
        """Repo module path for an absolute dotted module name, else None (external)."""
        memo = ("pymod", dotted)
        if memo in self._memo:
            return self._memo[memo]
        want = dotted.replace(".", "/")
        found = None
        cands = [m for m in self.py_modules if m == want or m.endswith("/" + want)]
        cands += [p for p in self.py_packages if (p == want or p.endswith("/" + want))
                  and p not in self.py_modules]
        good = []
        for m in cands:
            prefix = m[: len(m) - len(want)].rstrip("/")
            # the first component is a top-level package: what holds it is not a package
            # itself (the repository root is an import root even with an __init__.py in it)
            if not prefix or prefix not in self.py_packages:
                good.append(m)
        if not good:
            # PEP 420 namespace package: a directory of modules without __init__.py,
            # only when nothing regular matched (so stdlib names rarely land here).
            good = [d for d in self.py_namespace_dirs - self.py_packages
                    if (d == want or d.endswith("/" + want))
                    and (d == want or d[: len(d) - len(want)].rstrip("/") not in self.py_packages)]
        if good:
            found = min(good, key=len)
        elif "" in self.py_packages and "." in dotted:
            # the repository root is itself a package (an `__init__.py` in it), imported
            # by its own folder name: `from myroot.pkg.mod import f` is `pkg/mod`
            rest = dotted.split(".", 1)[1].replace(".", "/")
            if rest in self.py_modules or rest in self.py_packages:
                found = rest
        self._memo[memo] = found
        return found

    def _module_for_import(self, f: FileFacts, imp: Import):
        """Value of the module an import names."""
        if f.language == "python":
            if imp.relative:
                return ("mod", imp.module)
            m = self._py_module(imp.module)
            return ("mod", m) if m is not None else ("ext", imp.module)
        if f.language == "go":
            d = self._go_dir(imp.module)
            return ("mod", d) if d is not None else ("ext", imp.module)
        if f.language in _JS_LANGS:
            p = self._js_file(imp.module) if imp.relative else None
            return ("mod", "js:" + p) if p is not None else ("ext", imp.module)
        return None

    def _go_dir(self, import_path: str) -> str | None:
        for d, mod in self.go_mods:
            if import_path == mod:
                key = "go:" + d
                return key if key in self.go_pkgs else None
            if mod and import_path.startswith(mod + "/"):
                key = "go:" + posixpath.join(d, import_path[len(mod) + 1:])
                return key if key in self.go_pkgs else None
        if not self.go_mods:
            for key in self.go_pkgs:
                d = key[3:]
                if d and not key.endswith("#test") and import_path.endswith("/" + d):
                    return key
        return None

    def _js_file(self, spec: str) -> str | None:
        base = re.sub(r"\.(m|c)?js$", "", spec)
        for cand in [spec] + [base + e for e in _JS_EXTS] + [f"{base}/index{e}" for e in _JS_EXTS]:
            if cand in self.files:
                return cand
        return None

    def _go_pkg_name(self, path: str, name: str):
        """(path, def) of package-level ``name`` in the Go package of ``path``."""
        pkg = self.go_pkg_of.get(path)
        for p in self.go_pkgs.get(pkg, ()):
            d = self.top[p].get(name)
            if d is not None:
                return ("def", (p, d.symbol))
        for p in self.go_pkgs.get(pkg, ()):
            v = self.files[p].variables.get(name)
            if v is not None:
                return ("var", (p, v))
        return None

    # ---- name lookup in a file -------------------------------------------------------
    def _def_value(self, key: Key):
        d = self.defs[key]
        return ("cls", key) if d.kind == KIND_CLASS else ("fn", key)

    def lookup(self, path: str, name: str, seen: frozenset = frozenset()):
        """Value of a file-level ``name`` in ``path`` and the rule that found it."""
        memo = ("lookup", path, name)
        if memo in self._memo:
            return self._memo[memo]
        if (path, name) in seen or len(seen) > 20:
            return None, RULE_UNRESOLVED
        seen = seen | {(path, name)}
        result = self._lookup(path, name, seen)
        self._memo[memo] = result
        return result

    def _lookup(self, path: str, name: str, seen: frozenset):
        f = self.files.get(path)
        if f is None:
            return None, RULE_UNRESOLVED
        lang = f.language
        d = self.top[path].get(name)
        if d is not None:
            return self._def_value((path, d.symbol)), RULE_LOCAL
        if lang == "go":
            found = self._go_pkg_name(path, name)
            if found is not None:
                kind, val = found
                if kind == "def":
                    return self._def_value(val), RULE_PACKAGE
                vpath, rec = val
                return self.eval(rec, _Ctx(vpath, None)), RULE_PACKAGE
        if lang == "java":
            v = self._java_class(f, name)
            if v is not None:
                return v, RULE_IMPORT
        for imp in sorted(reversed(f.imports), key=lambda i: bool(i.scope)):  # file level first
            if imp.local_name != name or imp.static and lang != "java":
                continue
            return self._import_value(f, imp, seen), RULE_IMPORT
        v = f.variables.get(name)
        if v is not None:
            return self.eval(v, _Ctx(path, None)), RULE_LOCAL
        for imp in f.imports:
            if imp.name == "*" and lang != "java":
                mod = self._module_for_import(f, imp)
                if mod is not None and mod[0] == "mod":
                    val = self._module_member(mod[1], name, seen)
                    if val is not None:
                        return val, RULE_IMPORT
        if lang == "python" and name in PY_BUILTINS:
            return ("ext", name), RULE_EXTERNAL
        if lang == "go" and name in GO_BUILTINS:
            return ("ext", name), RULE_EXTERNAL
        if lang in _JS_LANGS and name in JS_GLOBALS:
            return ("ext", name), RULE_EXTERNAL
        if lang == "java" and name in JAVA_LANG:
            return ("ext", name), RULE_EXTERNAL
        if name in BUILTIN_TYPES.get(lang, ()):
            return ("ext", name), RULE_EXTERNAL
        return None, RULE_UNRESOLVED

    def _scoped_import(self, ctx: _Ctx, name: str):
        """``(value, RULE_IMPORT)`` when the function of ``ctx`` imports ``name`` itself
        (``from m import f as x`` inside it), else None."""
        if not ctx.caller:
            return None
        if self._scoped is None:
            self._scoped = {}
            for path, f in self.files.items():
                for imp in f.imports:
                    if imp.scope and imp.local_name:
                        self._scoped[(path, imp.scope, imp.local_name)] = (f, imp)
        hit = self._scoped.get((ctx.path, ctx.caller, name))
        if hit is None:
            return None
        return self._import_value(hit[0], hit[1], frozenset()), RULE_IMPORT

    def _import_value(self, f: FileFacts, imp: Import, seen: frozenset):
        if f.language == "java":
            return self._java_import(imp)
        if f.language == "python" and not imp.name:
            # `import a.b` binds `a`; `import a.b as z` binds z = a.b
            dotted = imp.module if imp.alias else imp.module.split(".")[0]
            m = self._py_module(dotted)
            return ("mod", m) if m is not None else ("ext", dotted)
        mod = self._module_for_import(f, imp)
        if mod is None or mod[0] != "mod" or not imp.name:
            return mod
        return self._module_member(mod[1], imp.name, seen) or (
            ("ext", imp.name) if f.language in _JS_LANGS and imp.name == "default" else None)

    def _module_member(self, mod: str, name: str, seen: frozenset = frozenset()):
        """``name`` inside module key ``mod`` (Python module path, ``go:dir``, ``js:path``)."""
        if mod.startswith("go:"):
            for p in self.go_pkgs.get(mod, ()):
                d = self.top[p].get(name)
                if d is not None:
                    return self._def_value((p, d.symbol))
            for p in self.go_pkgs.get(mod, ()):
                v = self.files[p].variables.get(name)
                if v is not None:
                    return self.eval(v, _Ctx(p, None))
            return None
        if mod.startswith("js:"):
            path = mod[3:]
            if name == "default":
                v = self.files[path].variables.get("default") if path in self.files else None
                if v is not None:
                    return self.eval(v, _Ctx(path, None))
            val, _ = self.lookup(path, name, seen)
            return val
        if mod.startswith("java:"):
            key = self.java_classes.get(f"{mod[5:]}.{name}")
            return ("cls", key) if key else None
        path = self.py_modules.get(mod)
        if path is not None:
            val, _ = self.lookup(path, name, seen)
            if val is not None:
                return val
        sub = f"{mod}/{name}" if mod else name
        if sub in self.py_modules or sub in self.py_packages or sub in self.py_namespace_dirs:
            return ("mod", sub)
        return None

    # ---- Java ------------------------------------------------------------------------
    def _java_import(self, imp: Import):
        if imp.static:
            cls = self.java_classes.get(imp.module)
            if cls is not None and imp.name and imp.name != "*":
                return self._class_member(("cls", cls), imp.name, as_value=False)
            return ("ext", imp.name or imp.module)
        fq = f"{imp.module}.{imp.name}" if imp.name and imp.name != "*" else imp.module
        key = self.java_classes.get(fq)
        return ("cls", key) if key else ("ext", fq)

    def _java_class(self, f: FileFacts, name: str):
        for imp in f.imports:
            if not imp.static and imp.local_name == name:
                return self._java_import(imp)
        key = self.java_classes.get(f"{f.package}.{name}" if f.package else name)
        if key is not None:
            return ("cls", key)
        for imp in f.imports:
            if imp.name == "*" and not imp.static:
                key = self.java_classes.get(f"{imp.module}.{name}")
                if key is not None:
                    return ("cls", key)
        return None

    # ---- classes ---------------------------------------------------------------------
    def _bases(self, key: Key) -> tuple[list[Key], bool]:
        """Resolved base class keys of ``key`` and whether some base is not in the repo."""
        if key in self._bases_memo:
            return self._bases_memo[key]
        self._bases_memo[key] = ([], False)  # cycle guard
        d = self.defs.get(key)
        out, foreign = [], False
        if d is not None:
            ctx = _Ctx(key[0], None)
            for b in d.bases:
                v = self.eval_type(b, ctx)
                if v is not None and v[0] in ("cls", "inst") and v[1] != key:
                    out.append(v[1])
                else:
                    foreign = True
        self._bases_memo[key] = (out, foreign)
        return out, foreign

    def mro(self, key: Key) -> list[Key]:
        """The class and its repository ancestors, nearest first (no duplicates)."""
        out, queue = [], [key]
        while queue and len(out) < 50:
            k = queue.pop(0)
            if k in out:
                continue
            out.append(k)
            queue.extend(self._bases(k)[0])
        return out

    def _has_foreign_base(self, key: Key) -> bool:
        return any(self._bases(k)[1] for k in self.mro(key))

    def _class_member(self, val, name: str, as_value: bool, skip_self: bool = False):
        """Member ``name`` of a class/instance value.

        With ``as_value`` (an attribute in a chain) fields are evaluated to their
        values and methods to their declared return type (property access);
        otherwise a method is returned as ``("fn", key)``. Returns ``None`` when
        unknown and ``("ext", name)`` when it may come from a non-repo base.
        """
        key = val[1]
        if name in (ELEM_INDEX, ELEM_ITER):  # element of a named container type
            d = self.defs[key]
            under = self.eval_type(d.returns, _Ctx(key[0], None)) if d.kind == KIND_CLASS \
                and d.returns else None
            return self.member(under, name) if under and under[0] == "elem" else None
        chain = self.mro(key)
        if skip_self:
            chain = chain[1:]
        for k in chain:
            d = self.defs[k]
            m = self.members.get(k, {}).get(name)
            if m is not None:
                md = self.defs[m]
                if md.kind == KIND_CLASS:
                    return ("cls", m)
                if not as_value:
                    return ("fn", m)
                if md.returns:
                    return self.eval_type(md.returns, _Ctx(m[0], k), ret=True)
                return None
            attr = d.attributes.get(name)
            if attr is not None:
                if not as_value:
                    return None  # calling a field (a callable attribute): unknown
                return self.eval(attr, _Ctx(k[0], k))
        if self._has_foreign_base(key) or (skip_self and not chain):
            return ("ext", name)
        return None

    def member(self, val, name: str, as_value: bool = True):
        if val is None:
            return None
        kind = val[0]
        if kind == "mod":
            return self._module_member(val[1], name)
        if kind in ("cls", "inst"):
            return self._class_member(val, name, as_value)
        if kind == "super":
            return self._class_member(("inst", val[1]), name, as_value, skip_self=True)
        if kind == "ext":
            return ("ext", f"{val[1]}.{name}")
        if kind == "elem":  # a container with known element types
            if name in (ELEM_ITER, ELEM_INDEX):
                t = val[1] if name == ELEM_ITER else val[2]
                return self.eval_type(t, _Ctx(val[3], val[4])) if t else None
            return ("ext", "container." + name)
        return None

    # ---- evaluation ------------------------------------------------------------------
    def _class_key(self, path: str, symbol: str) -> Key | None:
        if (path, symbol) in self.defs:
            return (path, symbol)
        f = self.files.get(path)
        if f is not None and f.language == "go":
            found = self._go_pkg_name(path, symbol)
            if found is not None and found[0] == "def":
                return found[1]
        return None

    def eval_type(self, text: str, ctx: _Ctx, ret: bool = False, index: int = 0):
        """Value of an instance of the type written ``text`` in ``ctx``'s file.

        ``ret`` with Go result lists picks result ``index``. Returns ``("inst", key)``
        for repository classes, ``("cls", key)`` for ``type[X]``/``typeof X``,
        ``("ext", name)`` for builtin or external types, ``None`` when unknown."""
        f = self.files.get(ctx.path)
        lang = f.language if f else ""
        if lang == "go" and ret:
            results = go_results(text)
            text = results[index] if index < len(results) else ""
            ret, index = False, 0
        elems = container_elements(text, lang)
        if elems is not None:
            return ("elem", elems[0], elems[1], ctx.path, ctx.cls)
        parts = split_type(text, lang, index if ret else 0)
        if parts is None:
            return None
        name, is_class_obj = parts
        if name.startswith("<ext>"):
            return ("ext", name[5:])
        segs = name.split(".")
        if lang == "java" and ctx.cls is not None:
            nested = self._class_member(("cls", ctx.cls), segs[0], as_value=False)
            val = nested if nested and nested[0] == "cls" else None
        else:
            val = None
        if val is None:
            val, _ = self.lookup(ctx.path, segs[0])
        if val is None and lang == "java" and len(segs) > 1:
            key = self.java_classes.get(name)
            return ("inst", key) if key else ("ext", name)
        for s in segs[1:]:
            val = self.member(val, s, as_value=False) if val and val[0] != "mod" else \
                self.member(val, s)
        if val is None:
            return None
        if val[0] == "cls":
            return val if is_class_obj else ("inst", val[1])
        if val[0] == "ext":
            return val
        if val[0] == "mod":
            return ("ext", name)
        return None

    def eval(self, rec: Receiver, ctx: _Ctx):
        """Evaluate a receiver/value expression to a value (see module docs)."""
        memo = ("eval", ctx.path, ctx.cls, json.dumps(rec.to_dict(), sort_keys=True))
        if memo in self._memo:
            return self._memo[memo]
        self._memo[memo] = None  # recursion guard
        self._depth += 1
        try:
            if self._depth > _MAX_DEPTH:
                return None
            val = self._eval_base(rec, ctx)
            for a in rec.attrs:
                val = self.member(val, a)
                if val is None:
                    break
        finally:
            self._depth -= 1
        self._memo[memo] = val
        return val

    def _eval_base(self, rec: Receiver, ctx: _Ctx):
        k = rec.kind
        if k == R_SELF:
            key = self._class_key(ctx.path, rec.type)
            return ("inst", key) if key else None
        if k == R_SUPER:
            key = self._class_key(ctx.path, rec.type)
            return ("super", key) if key else None
        if k == R_TYPE:
            return self.eval_type(rec.type, ctx)
        if k == R_CALL and rec.value is not None:
            target, _ = self.resolve_ref(rec.value, ctx)
            if self._is_wrapper(rec.value, target) and rec.value.args and rec.value.args[0] is not None:
                return self.eval(rec.value.args[0], ctx)  # `s = staticmethod(f)` is f
            return self._call_result(target, rec.index)
        if k in (R_MODULE, R_IDENT):
            f = self.files.get(ctx.path)
            if k == R_IDENT and f is not None and f.language == "java" and ctx.cls is not None:
                field = self._class_member(("inst", ctx.cls), rec.name, as_value=True)
                if field is not None:
                    return field
            scoped = self._scoped_import(ctx, rec.name)
            val, _ = scoped if scoped is not None else self.lookup(ctx.path, rec.name)
            if val is None and k == R_MODULE:
                return ("ext", rec.name)
            return val
        return None

    def _call_result(self, target, index: int = 0):
        if target is None:
            return None
        if target[0] == "cls":
            return ("inst", target[1])
        if target[0] == "fn":
            d = self.defs[target[1]]
            if not d.returns:
                return None
            owner = (target[1][0], d.class_symbol) if d.class_symbol else None
            owner = self._class_key(target[1][0], d.class_symbol) if owner else None
            return self.eval_type(d.returns, _Ctx(target[1][0], owner), ret=True, index=index)
        if target[0] == "ext":
            return ("ext", target[1])
        return None

    def _enclosing_classes(self, key: Key) -> list[Key]:
        """``Outer.Inner`` -> [Outer.Inner, Outer] (classes only)."""
        path, sym = key
        parts = sym.split(".")
        out = []
        for i in range(len(parts), 0, -1):
            k = (path, ".".join(parts[:i]))
            if k in self.defs and self.defs[k].kind == KIND_CLASS:
                out.append(k)
        return out

    def _ctor_call(self, rec: Receiver, ctx: _Ctx):
        """Java ``this(...)``/``super(...)``, TS ``super(...)``: a constructor call."""
        key = self._class_key(ctx.path, rec.type)
        if key is None:
            return None, RULE_UNRESOLVED
        if rec.kind == R_SUPER:
            bases, foreign = self._bases(key)
            if not bases:
                return (("ext", "super") if foreign else None), RULE_EXTERNAL
            key = bases[0]
        ctor = self._constructor(key)
        return (("fn", ctor) if ctor else ("cls", key)), \
            (RULE_SUPER if rec.kind == R_SUPER else RULE_SELF)

    def resolve_ref(self, ref: CallRef, ctx: _Ctx):
        """(target value, rule) for a called expression in ``ctx``."""
        rec = ref.receiver
        name = ref.callee_name
        f = self.files.get(ctx.path)
        lang = f.language if f else ""
        if rec.kind == R_NAME:
            if ref.new and "." in ref.callee_text and lang == "java":
                v = self.eval_type(ref.callee_text, ctx)
                return (("cls", v[1]) if v and v[0] == "inst" else v), RULE_CONSTRUCTOR
            if ctx.caller:
                nested = (ctx.path, f"{ctx.caller}.{name}")
                if nested in self.defs and self.defs[nested].caller_symbol != nested[1]:
                    return self._def_value(nested), RULE_NESTED
            if lang == "java" and ctx.cls is not None and not ref.new:
                for owner in self._enclosing_classes(ctx.cls):  # own, then outer classes
                    m = self._class_member(("inst", owner), name, as_value=False)
                    if m is not None and m[0] == "fn":
                        return m, (RULE_SELF if m[1][1].startswith(owner[1] + ".")
                                   else RULE_INHERITED)
            if lang == "java" and ref.new and ctx.cls is not None:
                nested = self._class_member(("cls", ctx.cls), name, as_value=False)
                if nested is not None and nested[0] == "cls":
                    return nested, RULE_CONSTRUCTOR
            scoped = self._scoped_import(ctx, name)
            val, rule = scoped if scoped is not None else self.lookup(ctx.path, name)
            if ref.new and val is not None and val[0] == "cls":
                rule = RULE_CONSTRUCTOR
            return val, rule
        if rec.kind in (R_SELF, R_SUPER) and name in ("super", "this") and name == rec.name:
            return self._ctor_call(rec, ctx)
        if rec.kind == R_UNKNOWN and not rec.attrs:
            local_callable = rec.name and rec.name == name == ref.callee_text
            return None, (RULE_DYNAMIC if local_callable else RULE_UNRESOLVED)
        base = self.eval(rec, ctx)
        if base is None:
            return None, RULE_UNRESOLVED
        if ref.new:
            val = self.member(base, name, as_value=False)
            return val, RULE_CONSTRUCTOR
        val = self.member(base, name, as_value=False)
        if val is None:
            return None, RULE_UNRESOLVED
        if val[0] == "ext":
            return val, RULE_EXTERNAL
        if base[0] == "mod":
            return val, RULE_PACKAGE if base[1].startswith("go:") else RULE_MODULE
        if rec.attrs:
            return val, RULE_ATTR_CHAIN
        if rec.kind == R_SUPER:
            return val, RULE_SUPER
        if rec.kind == R_SELF:
            inherited = base[0] == "inst" and val[0] == "fn" and \
                self.defs[val[1]].class_symbol != self.defs[base[1]].symbol
            return val, RULE_INHERITED if inherited else RULE_SELF
        return val, RULE_TYPED

    # ---- values that are functions (a flow-insensitive points-to pass) ---------------
    def callables(self, rec: Receiver, ctx: _Ctx, depth: int = 0) -> list:
        """The functions, classes and callable instances ``rec`` may hold in ``ctx``:
        ``[("fn", key) | ("cls", key) | ("inst", key)]`` (empty when unknown).

        Follows names to definitions (nested ones first), module variables, container
        literals (an element of ``{"a": f, "b": g}`` may be either), functions' returned
        values (``make()`` returning ``f``), ``functools.partial(f, …)``, attributes
        holding bound methods (``self.cb = self.handle``) and parameters (the values the
        callers pass at that position or keyword). Sets of values, no flow order: a name
        assigned twice may hold either value."""
        if depth > _MAX_VALUE_DEPTH:
            return []
        if rec.attrs:
            last, base_rec = rec.attrs[-1], rec.without_last_attr()
            if last in (ELEM_INDEX, ELEM_ITER):
                return [v for e, ectx in self._elements(base_rec, ctx, depth + 1)
                        for v in self.callables(e, ectx, depth + 1)]
            base = self.eval(base_rec, ctx)
            if base is None:
                return []
            if base[0] in ("inst", "cls", "super"):
                key = base[1]
                chain = self.mro(key)[1:] if base[0] == "super" else self.mro(key)
                for k in chain:
                    m = self.members.get(k, {}).get(last)
                    if m is not None:
                        return [self._def_value(m)]
                    attr = self.defs[k].attributes.get(last)
                    if attr is not None:
                        return self.callables(attr, _Ctx(k[0], k), depth + 1)
                return []
            v = self.member(base, last, as_value=False)
            return [v] if v is not None and v[0] in ("fn", "cls", "inst") else []
        if rec.kind == R_CALL and rec.value is not None:
            inner = rec.value
            if inner.callee_name in _ELEMENT_GETTERS and inner.receiver.kind not in (R_NAME, R_UNKNOWN):
                # `RULES.get(k)()`: an element of the container
                found = self.callables(inner.receiver.with_attr(ELEM_INDEX), ctx, depth + 1)
                if found:
                    return found
            target, _ = self.resolve_ref(inner, ctx)
            if target is None:
                return []
            if self._is_wrapper(inner, target):
                first = inner.args[0] if inner.args else None
                return self.callables(first, ctx, depth + 1) if first is not None else []
            if target[0] == "fn" and self.defs[target[1]].return_values:
                fctx = self._caller_ctx(*target[1])
                found = [v for r in self.defs[target[1]].return_values for v in self.callables(r, fctx, depth + 1)]
                if found:
                    return found
            v = self._call_result(target, rec.index)
            return [v] if v is not None and v[0] in ("fn", "cls", "inst") else []
        if rec.kind in (R_IDENT, R_MODULE):
            if ctx.caller:
                nested = (ctx.path, f"{ctx.caller}.{rec.name}")
                if nested in self.defs and self.defs[nested].caller_symbol != nested[1]:
                    return [self._def_value(nested)]
            f = self.files.get(ctx.path)
            var = f.variables.get(rec.name) if f is not None else None
            if var is not None and self.top[ctx.path].get(rec.name) is None and \
                    (var.kind in (R_CALL, R_IDENT) or var.attrs):
                return self.callables(var, _Ctx(ctx.path, None), depth + 1)
            val, _ = self.lookup(ctx.path, rec.name)
            return [val] if val is not None and val[0] in ("fn", "cls", "inst") else []
        if rec.kind == R_UNKNOWN and rec.name:
            return self._parameter_values(ctx, rec.name, depth + 1)
        if rec.kind == R_TYPE and rec.name and not rec.attrs:
            # a parameter annotated `type[Base]`: the classes its callers pass, when known
            passed = self._parameter_values(ctx, rec.name, depth + 1)
            if passed:
                return passed
        val = self.eval(rec, ctx)
        return [val] if val is not None and val[0] in ("fn", "cls", "inst") else []

    @staticmethod
    def _is_wrapper(ref: CallRef, target) -> bool:
        """A call of ``functools.partial`` / ``staticmethod`` / ``classmethod``: calling
        its result calls its first argument."""
        return target is not None and target[0] == "ext" and \
            (ref.callee_name in _WRAPPERS or target[1].rsplit(".", 1)[-1] in _WRAPPERS)

    def _elements(self, rec: Receiver, ctx: _Ctx, depth: int) -> list[tuple[Receiver, _Ctx]]:
        """The element values of the container ``rec`` denotes: a literal's own, or those
        of the module variable, imported variable or class attribute it names."""
        if depth > _MAX_VALUE_DEPTH:
            return []
        if rec.elems and not rec.attrs:
            return [(e, ctx) for e in rec.elems]
        if rec.attrs and rec.attrs[-1] in (ELEM_INDEX, ELEM_ITER):
            # an element of an element: `RULES[k][0]`, `fn, arg = RULES[k]`
            return [x for e, ectx in self._elements(rec.without_last_attr(), ctx, depth + 1)
                    for x in self._elements(e, ectx, depth + 1)]
        f = self.files.get(ctx.path)
        if f is None:
            return []
        if rec.kind in (R_IDENT, R_MODULE) and not rec.attrs:
            var = f.variables.get(rec.name)
            if var is not None:
                return self._elements(var, _Ctx(ctx.path, None), depth + 1)
            for imp in f.imports:
                if imp.local_name == rec.name and imp.name and f.language == "python":
                    mod = self._module_for_import(f, imp)
                    path = self.py_modules.get(mod[1]) if mod is not None and mod[0] == "mod" else None
                    if path is not None:
                        return self._elements(Receiver(R_IDENT, imp.name), _Ctx(path, None), depth + 1)
            return []
        if rec.attrs:
            base = self.eval(rec.without_last_attr(), ctx)
            if base is not None and base[0] in ("inst", "cls"):
                for k in self.mro(base[1]):
                    attr = self.defs[k].attributes.get(rec.attrs[-1])
                    if attr is not None:
                        return self._elements(attr, _Ctx(k[0], k), depth + 1)
        return []

    def _parameter_values(self, ctx: _Ctx, name: str, depth: int) -> list:
        """What parameter ``name`` of the function ``ctx`` is in may hold: the callables
        its callers pass at its position or by its name."""
        key = (ctx.path, ctx.caller)
        d = self.defs.get(key)
        if d is None or name not in d.params:
            return []
        i = d.params.index(name)
        positional = "*" not in d.params[:i]
        out = []
        for path, call in self._calls_to(key):
            arg = call.args[i] if positional and i < len(call.args) else None
            arg = arg if arg is not None else call.kwargs.get(name)
            if arg is not None:
                found = self.callables(arg, self._caller_ctx(path, call.caller_symbol), depth + 1)
                if call.implicit == IMPLICIT_DECORATOR:  # the decorated function before rebinding
                    found = [("orig", v[1]) if v[0] == "fn" else v for v in found]
                out += found
        return out

    def _rebound(self, key: Key) -> list[Key]:
        """The functions a decorated function's name is rebound to: what its decorators
        return when that is another function (``def dec(fn): def wrapper…; return
        wrapper``), not the function itself."""
        memo = ("rebound", key)
        if memo in self._memo:
            return self._memo[memo]
        self._memo[memo] = []  # recursion guard
        out: list[Key] = []
        f = self.files.get(key[0])
        for call in f.calls if f is not None else ():
            if call.implicit != IMPLICIT_DECORATOR or call.caller_symbol != key[1]:
                continue
            try:
                dec, _ = self.resolve_ref(call.ref(), self._caller_ctx(key[0], key[1]))
                if dec is not None and dec[0] == "cls":  # `@Cached`: the name is an instance
                    call_m = self._class_member(("inst", dec[1]), "__call__", as_value=False)
                    if call_m is not None and call_m[0] == "fn":
                        out.append(call_m[1])
                    continue
                if dec is None or dec[0] != "fn" or not self.defs[dec[1]].return_values:
                    continue
                dctx = self._caller_ctx(*dec[1])
                params = set(self.defs[dec[1]].params)
                for r in self.defs[dec[1]].return_values:
                    if r.kind == R_UNKNOWN and r.name in params:
                        continue  # returns the function it was given: no rebinding
                    out += [v[1] for v in self.callables(r, dctx) if v[0] == "fn" and v[1] != key]
            except RecursionError:
                continue
        self._memo[memo] = list(dict.fromkeys(out))
        return self._memo[memo]

    def _calls_to(self, key: Key) -> list[tuple[str, CallSite]]:
        """The call sites that resolve to the function ``key`` (by its name first)."""
        memo = ("calls_to", key)
        if memo in self._memo:
            return self._memo[memo]
        self._memo[memo] = []  # recursion guard
        if self._by_callee_name is None:
            self._by_callee_name = defaultdict(list)
            for path, f in self.files.items():
                for call in f.calls:
                    if not call.through:
                        self._by_callee_name[call.callee_name].append((path, call))
        out = []
        for path, call in self._by_callee_name.get(self.defs[key].name, ()):
            try:
                val, _ = self.resolve_ref(call.ref(), self._caller_ctx(path, call.caller_symbol))
            except RecursionError:
                continue
            if val is not None and val[1] == key:
                out.append((path, call))
        self._memo[memo] = out
        return out

    # ---- imports that should have mapped --------------------------------------------
    def unmapped_imports(self) -> list[tuple[str, int, str]]:
        """Absolute Python imports that look like the repository's own (their first
        component is a top-level folder or module here) but map to no module of it:
        ``[(path, line, module)]``, in file order. Calls through them are missing from
        the graph, so ``impact`` and ``doctor`` say so."""
        own = {m.split("/", 1)[0] for m in self.py_modules if m} | \
            {d.split("/", 1)[0] for d in self.py_namespace_dirs | self.py_packages if d}
        out = []
        for path, f in self.files.items():
            if f.language != "python":
                continue
            for imp in f.imports:
                if imp.relative or not imp.module:
                    continue
                top = imp.module.split(".", 1)[0]
                if top in own and self._py_module(imp.module) is None and \
                        (not imp.name or self._py_module(f"{imp.module}.{imp.name}") is None):
                    out.append((path, imp.line, imp.module))
        return out

    # ---- edges -----------------------------------------------------------------------
    def _caller_ctx(self, path: str, caller: str) -> _Ctx:
        d = self.defs.get((path, caller))
        cls = None
        if d is not None:
            if d.kind == KIND_CLASS:
                cls = self._class_key(path, d.symbol)
            elif d.class_symbol:
                cls = self._class_key(path, d.class_symbol)
        return _Ctx(path, cls, caller)

    def _constructor(self, key: Key) -> Key | None:
        """The constructor a call of class ``key`` runs: its own (``__init__``, a Java
        constructor, ``constructor``) or, when it defines none, the nearest inherited one
        (``B()`` runs ``A.__init__`` when ``B(A)`` has none; a Java default constructor
        calls ``super()``)."""
        for k in self.mro(key):
            d = self.defs[k]
            for name in ("__init__", d.name, "constructor"):
                m = self.members.get(k, {}).get(name)
                if m is not None and self.defs[m].kind != KIND_CLASS:
                    return m
        return None

    def _value_edges(self, path: str, call: CallSite, ctx: _Ctx) -> list[Edge]:
        """Edges of a call of a value: a *through* call (``a()``, ``hs[k]()``,
        ``make()()``), a call of a parameter (what the callers pass in), a call of an
        attribute holding a function (``self.cb()``). ``[]`` when nothing is known."""
        rec = call.receiver
        try:
            if call.through:
                vals, rule = self.callables(rec, ctx), RULE_VALUE
            elif rec.kind == R_UNKNOWN and not rec.attrs and rec.name == call.callee_name:
                vals, rule = self._parameter_values(ctx, rec.name, 0), RULE_CALLBACK
            elif rec.kind not in (R_NAME, R_UNKNOWN):
                vals, rule = self.callables(rec.with_attr(call.callee_name), ctx), RULE_VALUE
            else:
                return []
        except RecursionError:
            return []
        out, seen = [], set()
        for v in vals:
            if v is None or v in seen:
                continue
            seen.add(v)
            out += self._target_edges(path, call, v, rule)
        return out

    def _target_edges(self, path: str, call: CallSite, val, rule: str) -> list[Edge]:
        """The edges of ``call`` reaching the value ``val`` (a function, a class and its
        constructor, or an instance's ``__call__``); ``[]`` for anything else."""
        base = (path, call.caller_symbol, call.line)
        rebind = val[0] == "fn" and rule != RULE_DECORATOR
        if val[0] == "orig":  # the function itself, as its decorator received it
            val, rebind = ("fn", val[1]), False
        if val[0] == "inst":
            call_m = self.members.get(val[1], {}).get("__call__")
            return [Edge(*base, call_m[0], call_m[1], call.callee_name, True, rule)] if call_m else []
        if val[0] not in ("fn", "cls"):
            return []
        key = val[1]
        out = [Edge(*base, key[0], key[1], call.callee_name, True, rule)]
        if rebind:
            # a decorator that returns another function rebinds the name: the call runs it
            out += [Edge(*base, w[0], w[1], call.callee_name, True, RULE_VALUE) for w in self._rebound(key)]
        if val[0] == "cls":
            lang = self.files[key[0]].language
            if lang != "go" or rule == RULE_CONSTRUCTOR:
                if rule not in (RULE_DECORATOR, RULE_VALUE, RULE_CALLBACK):
                    out[0].rule = rule = RULE_CONSTRUCTOR
                ctor = self._constructor(key)
                if ctor is not None:
                    out.append(Edge(*base, ctor[0], ctor[1], call.callee_name, True, rule))
        return out

    def edges_for(self, path: str, call: CallSite) -> list[Edge]:
        """Edges of one call site (never raises: errors give an unresolved edge)."""
        ctx = self._caller_ctx(path, call.caller_symbol)
        base = (path, call.caller_symbol, call.line)
        if call.through:
            return self._value_edges(path, call, ctx) or [Edge(*base, "", "", call.callee_name, False, RULE_DYNAMIC)]
        try:
            val, rule = self.resolve_ref(call.ref(), ctx)
        except RecursionError:
            val, rule = None, RULE_UNRESOLVED
        if call.implicit == IMPLICIT_DECORATOR and val is not None and val[0] in ("fn", "cls"):
            rule = RULE_DECORATOR
        if val is not None and val[0] in ("fn", "cls"):
            out = self._target_edges(path, call, val, rule)
            if call.implicit == IMPLICIT_PROTOCOL and call.callee_name == "__iter__" and val[0] == "fn":
                # `for x in v`: the loop then calls __next__ of what __iter__ returned; a class
                # defining both is (almost always) its own iterator
                owner = self._class_key(val[1][0], self.defs[val[1]].class_symbol)
                nxt = self._class_member(("inst", owner), "__next__", as_value=False) if owner else None
                if nxt is not None and nxt[0] == "fn":
                    out.append(Edge(*base, nxt[1][0], nxt[1][1], "__next__", True, rule))
            return out
        if val is None and self.files[path].language == "python":
            # a parameter called, an attribute holding a function: follow the values
            found = self._value_edges(path, call, ctx)
            if found:
                return found
        if val is not None and val[0] in ("fn", "cls"):
            key = val[1]
            out = [Edge(*base, key[0], key[1], call.callee_name, True, rule)]
            if val[0] == "cls":
                lang = self.files[key[0]].language
                if lang != "go" or rule == RULE_CONSTRUCTOR:
                    out[0].rule = RULE_CONSTRUCTOR
                    ctor = self._constructor(key)
                    if ctor is not None:
                        out.append(Edge(*base, ctor[0], ctor[1], call.callee_name, True,
                                        RULE_CONSTRUCTOR))
            return out
        if val is not None and val[0] == "inst":
            call_m = self.members.get(val[1], {}).get("__call__")
            if call_m is not None:
                return [Edge(*base, call_m[0], call_m[1], call.callee_name, True, RULE_TYPED)]
        if val is not None and val[0] == "ext":
            return [Edge(*base, "", "", call.callee_name, False, RULE_EXTERNAL)] + \
                self._higher_order_edges(path, call, val, ctx)
        if rule not in (RULE_DYNAMIC, RULE_EXTERNAL):
            rule = RULE_UNRESOLVED
            if call.receiver.kind != R_NAME and self.files[path].language in RESOLVED_LANGUAGES:
                rule = RULE_RECEIVER_UNKNOWN
        return [Edge(*base, "", "", call.callee_name, False, rule)]

    def _higher_order_edges(self, path: str, call: CallSite, val, ctx: _Ctx) -> list[Edge]:
        """A builtin that calls the function it is given before it returns (``map(f,
        xs)``, ``sorted(xs, key=f)``, ``functools.reduce(f, xs)``): the caller calls
        ``f`` through it (a callback edge). Functions handed to anything else (a
        framework's ``register(f)``) are stored for later, not called here."""
        name = val[1].rsplit(".", 1)[-1]
        if self.files[path].language != "python" or name not in _HIGHER_ORDER:
            return []
        args = [call.args[0] if call.args and name in _FUNCTION_FIRST else None, call.kwargs.get("key")]
        out, seen = [], set()
        for arg in args:
            if arg is None:
                continue
            try:
                vals = self.callables(arg, ctx)
            except RecursionError:
                continue
            for v in vals:
                if v not in seen:
                    seen.add(v)
                    out += self._target_edges(path, call, v, RULE_CALLBACK)
        return out

    def edges(self) -> list[Edge]:
        """All edges of the repository, in file then call order."""
        out: list[Edge] = []
        for path, f in self.files.items():
            for call in f.calls:
                out.extend(self.edges_for(path, call))
        return out


def resolve(all_facts: list[FileFacts]) -> list[Edge]:
    """Resolve the calls of a whole repository.

    ``all_facts`` holds the :class:`FileFacts` of every file (``None`` entries are
    skipped; include ``go.mod`` facts so Go import paths map to directories). Returns
    one :class:`Edge` per call site (plus a constructor edge for class calls whose
    class defines one), resolved or not. Never raises on odd facts.
    """
    return Resolver(all_facts).edges()
