"""Type-expression normalisation and per-language builtin names for the resolver."""
from __future__ import annotations

import re

GO_BUILTINS = frozenset("""
append cap clear close complex copy delete imag len make max min new panic print println
real recover bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64
rune string uint uint8 uint16 uint32 uint64 uintptr any comparable nil true false iota
""".split())
JS_GLOBALS = frozenset("""
console Math JSON Object Array String Number Boolean Promise Symbol Map Set WeakMap WeakSet
Date RegExp Error TypeError RangeError parseInt parseFloat isNaN isFinite setTimeout
clearTimeout setInterval clearInterval require process Buffer globalThis window document
encodeURIComponent decodeURIComponent encodeURI decodeURI fetch structuredClone Reflect Proxy
BigInt queueMicrotask describe it test expect beforeEach afterEach beforeAll afterAll jest
""".split())
JAVA_LANG = frozenset("""
Object String StringBuilder StringBuffer Integer Long Short Byte Double Float Boolean
Character Math System Thread Runnable Exception RuntimeException Error Throwable
IllegalArgumentException IllegalStateException NullPointerException Class Iterable
Comparable CharSequence Number Void Enum Record AutoCloseable Override Deprecated
UnsupportedOperationException IndexOutOfBoundsException InterruptedException
""".split())
BUILTIN_TYPES = {
    "java": frozenset("int long short byte double float boolean char void var".split()),
    "typescript": frozenset("string number boolean any unknown void never object undefined "
                            "null bigint symbol Record Partial Readonly".split()),
}
BUILTIN_TYPES["tsx"] = BUILTIN_TYPES["javascript"] = BUILTIN_TYPES["typescript"]

_PY_WRAPPERS = {"Optional", "Annotated", "Final", "ClassVar", "Required", "NotRequired",
                "ReadOnly", "typing.Optional", "typing.Final", "typing.ClassVar",
                "typing.Annotated"}
_PY_CLASS_OBJ = {"type", "Type", "typing.Type"}
_NULLS = {"None", "null", "undefined", "nil"}


def split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside brackets/parentheses/angle brackets."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [p.strip() for p in out]


def go_results(text: str) -> list[str]:
    """Types of a Go result list ``(a, b T, err error)`` / ``(T, error)`` / ``T``."""
    text = text.strip()
    if not text.startswith("("):
        return [text]
    entries = split_top(text[1:-1], ",")
    named = any(" " in e.strip() and not e.strip().startswith(("func", "chan", "map", "[", "*",
                                                                 "interface", "struct"))
                for e in entries)
    if not named:
        return entries
    types: list[str] = []
    pending = 0
    for e in entries:
        bits = e.split(None, 1)
        if len(bits) == 2:
            types.extend([bits[1]] * (pending + 1))
            pending = 0
        else:
            pending += 1
    return types


def _strip_generics(name: str) -> str:
    depth, out = 0, []
    for ch in name:
        if ch in "<[":
            depth += 1
        elif ch in ">]":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip()


def split_type(text: str, lang: str, index: int = 0):
    """Normalise a type expression to ``(dotted name, is_class_object)``.

    Returns ``("<ext>kind", False)`` for builtin containers and function types and
    ``None`` when the expression names no single type (unions, literals, ``var``).
    ``index`` picks one result of a Go result list. Examples: ``Optional["Response"]``
    -> ``("Response", False)``, ``type[Foo]`` -> ``("Foo", True)``, ``*gin.Context`` ->
    ``("gin.Context", False)``, ``(T, error)`` with index 1 -> ``("error", False)``,
    ``Promise<Foo | null>`` -> ``("Foo", False)``, ``[]HandlerFunc`` -> ``("<ext>slice", False)``.
    """
    t = (text or "").strip()
    if not t:
        return None
    if lang == "go":
        results = go_results(t)
        if index >= len(results):
            return None
        t = results[index].strip().lstrip("*").strip()
        if t.startswith(("[", "map[", "chan", "func", "<-", "interface", "struct", "...")):
            return ("<ext>" + t.split("[")[0][:10], False)
        t = _strip_generics(t)
        return (t, False) if re.fullmatch(r"[\w.]+", t) else None
    if lang == "python":
        return _py_type(t.replace('"', "").replace("'", ""), 0)
    if lang == "java":
        t = re.sub(r"@\w+(\([^)]*\))?\s*", "", t).replace("final ", "").strip()
        if t.endswith("[]") or t.endswith("..."):
            return ("<ext>array", False)
        t = _strip_generics(t)
        return (t, False) if re.fullmatch(r"[\w.$]+", t) else None
    # JS / TS
    t = t.lstrip(":").strip()
    alts = [a for a in split_top(t, "|") if a and a not in _NULLS]
    if len(alts) != 1:
        return None
    t = alts[0]
    m = re.fullmatch(r"Promise\s*<(.*)>", t)
    if m:
        return split_type(m.group(1), lang)
    if t.startswith("typeof "):
        return (t[7:].strip(), True)
    if t.endswith("[]") or t.startswith(("Array<", "ReadonlyArray<", "[", "(", "{")):
        return ("<ext>array", False)
    t = _strip_generics(t)
    return (t, False) if re.fullmatch(r"[\w.$]+", t) else None


def _py_type(t: str, depth: int):
    if depth > 5:
        return None
    t = t.strip()
    alts = [a for a in split_top(t, "|") if a and a not in _NULLS]
    if len(alts) != 1:
        return None
    t = alts[0]
    m = re.fullmatch(r"([\w.]+)\s*\[(.*)\]", t, flags=re.S)
    if m:
        outer, inner = m.group(1), m.group(2)
        if outer in _PY_WRAPPERS:
            return _py_type(split_top(inner, ",")[0], depth + 1)
        if outer in ("Union", "typing.Union"):
            args = [a for a in split_top(inner, ",") if a not in _NULLS]
            return _py_type(args[0], depth + 1) if len(args) == 1 else None
        if outer in _PY_CLASS_OBJ:
            r = _py_type(inner, depth + 1)
            return (r[0], True) if r else None
        t = outer
    return (t, False) if re.fullmatch(r"[\w.]+", t) else None


_PY_SEQS = {"list", "List", "Sequence", "MutableSequence", "Iterable", "Iterator", "Collection",
            "set", "Set", "frozenset", "FrozenSet", "AbstractSet", "MutableSet", "deque",
            "Deque", "Generator", "AsyncIterator", "AsyncIterable", "tuple", "Tuple"}
_PY_MAPS = {"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict", "defaultdict",
            "DefaultDict"}
_JS_SEQS = {"Array", "ReadonlyArray", "Set", "ReadonlySet", "Iterable", "IterableIterator"}
_JAVA_SEQS = {"List", "ArrayList", "LinkedList", "Collection", "Set", "HashSet", "TreeSet",
              "Iterable", "Queue", "Deque", "ArrayDeque"}


def container_elements(text: str, lang: str) -> tuple[str, str] | None:
    """``(iterated element type, subscript element type)`` of a container type, else None.

    ``[]*node`` -> ``("*node", "*node")``; ``map[string]T`` -> ``("T", "T")`` (Go range
    value); ``dict[str, Foo]`` -> ``("str", "Foo")``; ``list[Foo]`` / ``Foo[]`` /
    ``List<Foo>`` -> ``("Foo", "Foo")``. Empty strings mean unknown."""
    t = (text or "").strip()
    if lang == "go":
        t = t.lstrip("*").strip()
        m = re.fullmatch(r"\[[^\]]*\](.+)", t)
        if m:
            return m.group(1).strip(), m.group(1).strip()
        if t.startswith("map["):
            depth = 0
            for i, ch in enumerate(t[3:], 3):
                depth += ch == "["
                depth -= ch == "]"
                if depth == 0:
                    v = t[i + 1:].strip()
                    return v, v
        return None
    if lang == "python":
        t = t.replace('"', "").replace("'", "")
        alts = [a for a in split_top(t, "|") if a and a not in _NULLS]
        if len(alts) != 1:
            return None
        t = alts[0]
        m = re.fullmatch(r"(?:typing\.|collections\.abc\.)?([\w]+)\s*\[(.*)\]", t, flags=re.S)
        if not m:
            return None
        outer, args = m.group(1), split_top(m.group(2), ",")
        if outer in ("Optional",):
            return container_elements(args[0], lang)
        if outer in _PY_MAPS and len(args) == 2:
            return args[0], args[1]
        if outer in _PY_SEQS and args:
            if outer in ("tuple", "Tuple") and not (len(args) == 2 and args[1] == "..."):
                return None
            return args[0], args[0]
        return None
    if lang in ("javascript", "typescript", "tsx", "java"):
        t = t.lstrip(":").strip()
        if t.endswith("[]"):
            return t[:-2], t[:-2]
        m = re.fullmatch(r"([\w.]+)\s*<(.*)>", t, flags=re.S)
        if m:
            outer, args = m.group(1).split(".")[-1], split_top(m.group(2), ",")
            seqs = _JAVA_SEQS if lang == "java" else _JS_SEQS
            if outer in seqs and len(args) == 1:
                return args[0], (args[0] if outer.endswith("Array") or lang == "java" else "")
        return None
    return None
