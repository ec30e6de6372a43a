"""Small Python programs, one per call pattern, with the exact direct callers of one
target each: the cases of ``tests/unit/test_impact_patterns.py`` and ``bench/impact_bench.py``.

Patterns: A imports (under a root ``__init__.py``, the root imported by its folder
name, imports inside functions); B functions as values (aliases, callbacks, containers
literal, annotated, nested or unpacked, ``.get``, loops over ``.values()``/``.items()``,
returned functions, lambdas, bound methods, ``partial``/``staticmethod``, a variable
given two functions, builtins that call their argument); C decorators (the decorated
definition calls its decorator; a class used as one); D inherited constructors,
``cls()`` in a classmethod and protocol methods (``for``, ``with``, ``raise``).
"""
from __future__ import annotations

from typing import NamedTuple

M = "mod.py"  # the file of most single-file programs


class Case(NamedTuple):
    """One program: ``files`` ``{path: source}``, the ``target`` ``(path, symbol)`` and
    the exact set of its direct ``callers`` ``{(path, symbol)}``."""

    id: str
    pattern: str
    files: dict[str, str]
    target: tuple[str, str]
    callers: set[tuple[str, str]]


_PATTERNS = {"A": "imports (a root __init__.py, imports inside functions)", "B": "functions as values", "C": "decorators",
             "D": "inherited constructors and protocols", "E": "exact names", "F": "receivers of known types"}


def case(id_: str, files, target, expected) -> Case:
    if isinstance(files, str):
        files = {M: files}
    return Case(id_, _PATTERNS[id_[0]], files, target, expected)


# ---- A. root __init__.py ---------------------------------------------------------------
ROOT_INIT = {"__init__.py": "", "pkg/__init__.py": "", "pkg/mod.py": "def f(): pass\n"}

A_CASES = [
    case("A1-root-init-from-import", {**ROOT_INIT, "main.py": """\
from pkg.mod import f


def g():
    f()
"""}, ("pkg/mod.py", "f"), {("main.py", "g")}),
    case("A2-root-init-import-module", {**ROOT_INIT, "main.py": """\
import pkg.mod


def g():
    pkg.mod.f()
"""}, ("pkg/mod.py", "f"), {("main.py", "g")}),
]


# ---- B. functions as values ------------------------------------------------------------
B_CASES = [
    case("B01-alias-in-function", """\
def f():
    pass


def g():
    a = f
    a()
""", (M, "f"), {(M, "g")}),
    case("B02-alias-at-module-level", """\
def f():
    pass


a = f


def g():
    a()
""", (M, "f"), {(M, "g")}),  # `a = f` itself calls nothing
    # Decision: the function that CALLS f is `run` (through its parameter `cb`); `g` only
    # passes f as a value, so the exact set is {run}.
    case("B03-callback-param", """\
def f():
    pass


def run(cb):
    cb()


def g():
    run(f)
""", (M, "f"), {(M, "run")}),
    case("B04-dict-of-functions", """\
def f():
    pass


H = {"a": f}


def g():
    H["a"]()
""", (M, "f"), {(M, "g")}),
    case("B05-list-of-functions", """\
def f():
    pass


L = [f]


def g():
    for h in L:
        h()
""", (M, "f"), {(M, "g")}),
    case("B06-tuple-of-functions", """\
def f():
    pass


T = (f,)


def g():
    T[0]()
""", (M, "f"), {(M, "g")}),
    # `make` returns f without calling it: not a caller.
    case("B07-returned-and-called-directly", """\
def f():
    pass


def make():
    return f


def g():
    make()()
""", (M, "f"), {(M, "g")}),
    case("B08-returned-bound-and-called", """\
def f():
    pass


def make():
    return f


def g2():
    x = make()
    x()
""", (M, "f"), {(M, "g2")}),
    # The lambda's body belongs to its enclosing def g.
    case("B09-lambda-in-function", """\
def f():
    pass


def g():
    k = lambda: f()
    k()
""", (M, "f"), {(M, "g")}),
    # __init__ only stores the bound method; `use` calls it.
    case("B10-self-attr-bound-method", """\
class C:
    def __init__(self):
        self.x = self.m

    def m(self):
        pass

    def use(self):
        self.x()
""", (M, "C.m"), {(M, "C.use")}),
    case("B11-functools-partial", """\
import functools


def f(a):
    pass


def g():
    p = functools.partial(f, 1)
    p()
""", (M, "f"), {(M, "g")}),
    case("B12-from-functools-import-partial", """\
from functools import partial


def f(a):
    pass


def g():
    p = partial(f, 1)
    p()
""", (M, "f"), {(M, "g")}),
    # Same decision as B03: `run` calls the bound method through `cb`; C.go only passes it.
    case("B13-bound-method-as-callback", """\
def run(cb):
    cb()


class C:
    def m(self):
        pass

    def go(self):
        run(self.m)
""", (M, "C.m"), {(M, "run")}),
]


# A decorator that returns its own wrapper (C4, C6).
WRAPPING = """\
def dec(fn):
    def wrapper(*a):
        return fn(*a)
    return wrapper


@dec
def h():
    pass


def g():
    h()
"""


# ---- C. decorators ---------------------------------------------------------------------
# Convention: the decorated function counts as the caller of its decorator.
C_CASES = [
    case("C1-plain-decorator", """\
def dec(fn):
    return fn


@dec
def h():
    pass
""", (M, "dec"), {(M, "h")}),
    case("C2-decorator-with-arguments", """\
def dec(n):
    def wrap(fn):
        return fn
    return wrap


@dec(1)
def h():
    pass
""", (M, "dec"), {(M, "h")}),
    case("C3-imported-decorator-on-method", {
        "deco.py": """\
def dec(fn):
    return fn
""",
        M: """\
from deco import dec


class K:
    @dec
    def m(self):
        pass
"""}, ("deco.py", "dec"), {(M, "K.m")}),
    # g calls h by name and stays its caller although h is rebound to `wrapper`; and dec
    # is a caller too: `fn(*a)` inside its wrapper calls the original h (the decorated
    # function is passed to dec's parameter `fn`), so changing h's signature breaks dec.
    case("C4-wrapping-decorator-keeps-callers", WRAPPING, (M, "h"), {(M, "g"), (M, "dec")}),
]


# ---- D. inherited constructors and protocol methods ------------------------------------
RES = """\
class Res:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def g():
    with Res() as r:
        print(r)
"""

D_CASES = [
    case("D1-inherited-init", """\
class A:
    def __init__(self):
        pass


class B(A):
    pass


def g():
    B()
""", (M, "A.__init__"), {(M, "g")}),
    case("D2-inherited-init-two-levels-across-files", {
        "a.py": """\
class A:
    def __init__(self):
        pass
""",
        "b.py": """\
from a import A


class B(A):
    pass


class C(B):
    pass
""",
        "main.py": """\
from b import C


def g():
    C()
"""}, ("a.py", "A.__init__"), {("main.py", "g")}),
    case("D3-for-calls-iter", """\
class Bag:
    def __iter__(self):
        return iter([])


def g():
    for x in Bag():
        print(x)
""", (M, "Bag.__iter__"), {(M, "g")}),
    case("D4-with-calls-enter", RES, (M, "Res.__enter__"), {(M, "g")}),
    case("D5-with-calls-exit", RES, (M, "Res.__exit__"), {(M, "g")}),
    case("D6-raise-calls-init", """\
class MyErr(Exception):
    def __init__(self, msg):
        super().__init__(msg)


def g():
    raise MyErr("x")
""", (M, "MyErr.__init__"), {(M, "g")}),
    case("D7-raise-subclass-calls-inherited-init", """\
class MyErr(Exception):
    def __init__(self, msg):
        super().__init__(msg)


class SubErr(MyErr):
    pass


def g():
    raise SubErr("x")
""", (M, "MyErr.__init__"), {(M, "g")}),
]



MORE_CASES = [
    case("A3-root-init-relative-import", {**ROOT_INIT, "pkg/use.py": """\
from .mod import f


def g():
    f()
"""}, ("pkg/mod.py", "f"), {("pkg/use.py", "g")}),
    case("B14-class-as-value", """\
class Foo:
    def __init__(self):
        pass


def g():
    cls = Foo
    cls()
""", (M, "Foo.__init__"), {(M, "g")}),
    case("B15-dispatch-table-in-attribute", """\
class Bus:
    def __init__(self):
        self.handlers = {"a": self.on_a, "b": self.on_b}

    def on_a(self):
        pass

    def on_b(self):
        pass

    def dispatch(self, kind):
        self.handlers[kind]()
""", (M, "Bus.on_b"), {(M, "Bus.dispatch")}),
    case("B16-callback-by-keyword", """\
def f():
    pass


def run(n, cb=None):
    cb()


def g():
    run(1, cb=f)
""", (M, "f"), {(M, "run")}),
    case("B17-callback-passed-on-through-two-functions", """\
def f():
    pass


def inner(cb):
    cb()


def outer(cb):
    inner(cb)


def g():
    outer(f)
""", (M, "f"), {(M, "inner")}),
    case("C5-class-decorator", """\
REGISTRY = []


def register(cls):
    REGISTRY.append(cls)
    return cls


@register
class K:
    pass
""", (M, "register"), {(M, "K")}),
    case("C6-wrapping-decorator-rebinds-the-name", WRAPPING, (M, "dec.wrapper"), {(M, "g")}),
    case("D9-for-calls-next-of-its-own-iterator", """\
class Countdown:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n == 0:
            raise StopIteration
        self.n -= 1
        return self.n


def g():
    for x in Countdown(3):
        print(x)
""", (M, "Countdown.__next__"), {(M, "g")}),
    case("D8-with-on-a-returned-instance", """\
class Res:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def open_res() -> Res:
    return Res()


def g():
    with open_res() as r:
        print(r)
""", (M, "Res.__enter__"), {(M, "g")}),
]


# Found by trying impact on real-looking code: values held in annotated, nested and
# unpacked containers, variables given two functions, imports inside functions,
# classmethods, class decorators and builtins that call what they are given.
ROUND_TWO_CASES = [
    case("A4-root-package-imported-by-its-folder-name", {**ROOT_INIT, "main.py": """\
from myproject.pkg.mod import f


def g():
    f()
"""}, ("pkg/mod.py", "f"), {("main.py", "g")}),
    case("A5-same-alias-imported-in-two-functions", """\
def f():
    pass


def h():
    pass


def a():
    from mod import f as x
    x()


def b():
    from mod import h as x
    x()
""", (M, "f"), {(M, "a")}),
    case("B18-annotated-dict-literal", """\
from typing import Callable, Dict


def f():
    pass


def g(k):
    rules: Dict[str, Callable] = {"a": f}
    rules[k]()
""", (M, "f"), {(M, "g")}),
    case("B19-element-of-an-element", """\
def f():
    pass


RULES = {"a": (f, 1)}


def g(k):
    RULES[k][0]()
""", (M, "f"), {(M, "g")}),
    case("B20-tuple-unpacked-from-a-table", """\
def f():
    pass


RULES = {"a": (f, 1)}


def g(k):
    fn, arg = RULES[k]
    fn()
""", (M, "f"), {(M, "g")}),
    case("B21-subscript-of-a-dict-literal", """\
def f():
    pass


def g(k):
    {"a": f}[k]()
""", (M, "f"), {(M, "g")}),
    case("B22-variable-given-two-functions", """\
def f():
    pass


def h():
    pass


def g(c):
    x = f
    if c:
        x = h
    x()
""", (M, "f"), {(M, "g")}),
    case("B23-loop-over-values-and-items", """\
def f():
    pass


RULES = {"a": f}


def g():
    for name, fn in RULES.items():
        fn()


def g2():
    for fn in RULES.values():
        fn()


def g3():
    for name in RULES:
        print(name)
""", (M, "f"), {(M, "g"), (M, "g2")}),
    case("B24-dict-get-then-call", """\
def f():
    pass


RULES = {"a": f}


def g(k):
    RULES.get(k)()
""", (M, "f"), {(M, "g")}),
    case("B25-staticmethod-of-a-function", """\
def f():
    pass


class A:
    s = staticmethod(f)

    def g(self):
        self.s()
""", (M, "f"), {(M, "A.g")}),
    case("B26-builtins-that-call-their-argument", """\
def f(x):
    return x


def g(xs):
    return sorted(xs, key=f)


def g2(xs):
    return list(map(f, xs))


def g3(xs):
    return [f, xs]
""", (M, "f"), {(M, "g"), (M, "g2")}),
    case("C7-class-used-as-decorator-runs-its-call", """\
class Cached:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self):
        return self.fn()


@Cached
def f():
    pass


def g():
    f()
""", (M, "Cached.__call__"), {(M, "g")}),
    case("D10-cls-in-a-classmethod-constructs", """\
class A:
    def __init__(self):
        pass

    @classmethod
    def make(cls):
        return cls()

    @staticmethod
    def other(cls):
        return cls()
""", (M, "A.__init__"), {(M, "A.make")}),
]

CASES: list[Case] = A_CASES + B_CASES + C_CASES + D_CASES + MORE_CASES + ROUND_TWO_CASES
