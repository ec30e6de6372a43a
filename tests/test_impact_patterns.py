"""Impact analysis on Python patterns the call graph must get exactly right.

Every case builds a small in-memory program and checks the EXACT set of direct
callers ``(path, symbol)`` of one target definition (symbol "" = module level):
no caller may be missing and none may be invented by name matching. Where a call
site can only be matched by name, it must be listed by ``possible_callers`` and
not by ``callers``.

Groups: A root ``__init__.py``; B functions as values; C decorators; D inherited
constructors and protocol methods; E exact module names win; F no false callers
from name matching; G genuinely dynamic calls.
"""
from __future__ import annotations

import pytest

from indexer.graph import build_graph


# ---- helpers -------------------------------------------------------------------------
def _graph(files: dict[str, str]):
    for path, src in files.items():  # a broken test program must fail here, not look like a resolver gap
        compile(src, path, "exec")
    return build_graph(files)


def _target(g, target: tuple[str, str]):
    path, symbol = target
    defs = [d for d in g.find_definitions(symbol) if d.path == path and d.symbol == symbol]
    assert len(defs) == 1, (target, defs)
    return defs[0]


def callers(files: dict[str, str], target: tuple[str, str], depth: int = 1) -> set[tuple[str, str]]:
    """``(path, symbol)`` of the callers of ``target`` = ``(path, symbol)`` up to ``depth``."""
    g = _graph(files)
    return {(c.path, c.symbol) for c in g.callers(_target(g, target), depth)}


def possible(files: dict[str, str], target: tuple[str, str]) -> set[tuple[str, str]]:
    g = _graph(files)
    return {(c.path, c.symbol) for c in g.possible_callers(_target(g, target))}


M = "mod.py"  # the file of most single-file programs


def case(id_: str, files, target, expected):
    if isinstance(files, str):
        files = {M: files}
    return pytest.param(files, target, expected, id=id_)


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
    case("C4-wrapping-decorator-keeps-callers", """\
def dec(fn):
    def wrapper(*a):
        return fn(*a)
    return wrapper


@dec
def h():
    pass


def g():
    h()
""", (M, "h"), {(M, "g"), (M, "dec")}),
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


@pytest.mark.parametrize("files,target,expected", A_CASES + B_CASES + C_CASES + D_CASES)
def test_exact_direct_callers(files, target, expected):
    assert callers(files, target) == expected


# ---- E. exact names win ----------------------------------------------------------------
TWO_UTILS = {
    "a/__init__.py": "",
    "a/util.py": "def helper():\n    pass\n",
    "b/a/util.py": "def helper():\n    pass\n",  # b/ is a plain directory (no __init__.py)
    "main.py": """\
from a.util import helper


def g():
    helper()
""",
    "other.py": """\
from b.a.util import helper


def k():
    helper()
""",
}


def test_E1_find_definitions_prefers_exact_module_path():
    g = _graph(TWO_UTILS)
    assert [(d.path, d.symbol) for d in g.find_definitions("a.util.helper")] == [("a/util.py", "helper")]
    assert [(d.path, d.symbol) for d in g.find_definitions("b.a.util.helper")] == [("b/a/util.py", "helper")]


def test_E2_import_of_exact_module_beats_longer_suffix_match():
    assert callers(TWO_UTILS, ("a/util.py", "helper")) == {("main.py", "g")}


def test_E3_longer_module_path_gets_only_its_own_callers():
    assert callers(TWO_UTILS, ("b/a/util.py", "helper")) == {("other.py", "k")}


# ---- F. no false callers from name matching --------------------------------------------
FLASKISH = {
    "app/__init__.py": "",
    "app/views.py": """\
def update():
    return "view"
""",
    "app/api.py": """\
from app.views import update


def caller():
    update()


def top():
    caller()
""",
    "app/core.py": """\
class Env:
    def __init__(self, env):
        self.env = env

    def build(self):
        d = {}
        d.update(x=1)
        return d

    def register(self, x):
        self.env.globals.update(x)


def other(kw):
    kw.update(a=1)


def uses_other():
    other({})
""",
}
UPDATE = ("app/views.py", "update")


def test_F1_only_real_callers_of_update():
    assert callers(FLASKISH, UPDATE) == {("app/api.py", "caller")}


def test_F2_untyped_parameter_member_call_is_only_possible():
    assert ("app/core.py", "other") in possible(FLASKISH, UPDATE)
    assert ("app/core.py", "other") not in callers(FLASKISH, UPDATE)


def test_F3_unknown_attribute_chain_member_call_is_only_possible():
    assert ("app/core.py", "Env.register") in possible(FLASKISH, UPDATE)
    assert ("app/core.py", "Env.register") not in callers(FLASKISH, UPDATE)


def test_F4_known_dict_receiver_is_neither_caller_nor_possible():
    assert ("app/core.py", "Env.build") not in possible(FLASKISH, UPDATE)
    assert ("app/core.py", "Env.build") not in callers(FLASKISH, UPDATE)
    assert possible(FLASKISH, UPDATE) == {("app/core.py", "other"), ("app/core.py", "Env.register")}


def test_F5_depth_two_never_expands_possible_callers():
    assert callers(FLASKISH, UPDATE, depth=2) == {("app/api.py", "caller"), ("app/api.py", "top")}


BUILTIN_RECEIVERS = {
    "util.py": """\
def append(x):
    pass


def join(*parts):
    pass
""",
    "main.py": """\
from util import append, join


def real():
    append(1)
    join("a", "b")


def g():
    [].append(1)
    xs = []
    xs.append(2)
    ", ".join(["a"])
    sep = "-"
    sep.join(["b"])
""",
}


def test_F6_list_append_never_matches_repo_append():
    assert callers(BUILTIN_RECEIVERS, ("util.py", "append")) == {("main.py", "real")}
    assert possible(BUILTIN_RECEIVERS, ("util.py", "append")) == set()


def test_F7_str_join_never_matches_repo_join():
    assert callers(BUILTIN_RECEIVERS, ("util.py", "join")) == {("main.py", "real")}
    assert possible(BUILTIN_RECEIVERS, ("util.py", "join")) == set()


# ---- G. genuinely dynamic calls --------------------------------------------------------
def test_G1_getattr_call_is_not_a_caller():
    files = {M: """\
def f():
    pass


def dyn(obj, name):
    getattr(obj, name)()


def h():
    f()
"""}
    assert callers(files, (M, "f")) == {(M, "h")}
