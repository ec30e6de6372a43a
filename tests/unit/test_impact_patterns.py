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

from helpers.impact_patterns import CASES, ROOT_INIT
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


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_exact_direct_callers(case):
    assert callers(case.files, case.target) == case.callers


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


def test_F5b_possible_callers_are_followed_only_when_asked_and_stay_guesses():
    from bot.impact import _expand

    g = _graph(FLASKISH)
    target = _target(g, UPDATE)
    direct, maybe = g.callers(target, 2), g.possible_callers(target)
    assert {(c.path, c.symbol) for c in _expand(g, target, direct, maybe, 1)} == possible(FLASKISH, UPDATE)
    expanded = _expand(g, target, direct, maybe, 2)
    deeper = [c for c in expanded if (c.path, c.symbol) == ("app/core.py", "uses_other")]
    assert len(deeper) == 1 and deeper[0].depth == 2 and not deeper[0].resolved
    assert not {(c.path, c.symbol) for c in expanded} & {(c.path, c.symbol) for c in direct}


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


# ---- what impact says about the graph's limits -----------------------------------------
def test_blind_spots_are_calls_of_unknown_values_and_eval():
    g = _graph({M: """\
def f():
    pass


def run(cb):
    cb()


def pick():
    return 1


def g(name):
    run(pick)
    eval("f()")
    getattr(object(), name)()
    run(f)
"""})
    spots = {(b.line, b.what) for b in g.blind_spots({M})}
    # run's cb() holds f and pick (known): not blind; eval and the getattr result are
    assert spots == {(15, "eval"), (16, "getattr()")}
    assert {(c.path, c.symbol) for c in g.callers(_target(g, (M, "f")), 1)} == {(M, "run")}


def test_a_caller_built_on_a_name_match_is_labelled_at_every_depth():
    g = _graph({
        "lib.py": "def helper():\n    pass\n",
        "use.py": "def a():\n    helper()\n\n\ndef b():\n    a()\n",  # helper() not imported: a name match
    })
    found = {(c.symbol, c.depth, c.resolved) for c in g.callers(_target(g, ("lib.py", "helper")), 2)}
    assert found == {("a", 1, False), ("b", 2, False)}


def test_unmapped_imports_of_the_repositorys_own_modules_are_reported():
    g = _graph({**ROOT_INIT, "main.py": "from pkg.mod import f\nfrom pkg.gone import z\nimport os\n"})
    assert g.unmapped_imports() == [("main.py", 2, "pkg.gone")]


def test_the_text_report_names_decorations_blind_spots_and_unmapped_imports():
    from bot.impact import format_report

    report = {"symbol": "dec", "kind": "function", "repo": "r", "commit": "abcdef123",
              "definitions": [{"path": "m.py", "start_line": 1, "end_line": 2}],
              "callers": [{"path": "m.py", "symbol": "h", "line": 5, "depth": 1, "is_test": False,
                           "resolved": True, "via": "decorator"}],
              "possible_callers": [],
              "blind_spots": [{"path": "m.py", "symbol": "g", "line": 9, "what": "cb"}],
              "unmapped_imports": [{"path": "main.py", "line": 2, "module": "pkg.gone"}]}
    text = format_report(report)
    assert "h  depth 1  (decorated by it)" in text
    assert "Callers: 1 (1 direct) - may be incomplete: 1 call site(s) below cannot be followed" in text
    assert "m.py:9  g calls cb" in text
    assert "1 import(s) of this repository's own modules map to none of them (e.g. main.py:2 pkg.gone)" in text


def test_the_text_report_says_decorated_by_it_only_of_the_target_and_caps_possible_callers():
    from bot.impact import POSSIBLE_SHOWN, format_report

    def caller(sym, depth, via="call", resolved=True):
        return {"path": "m.py", "symbol": sym, "line": depth, "depth": depth, "is_test": False,
                "resolved": resolved, "via": via}
    extra = 4
    report = {"symbol": "dec", "kind": "function", "repo": "r", "commit": "abcdef123",
              "definitions": [{"path": "m.py", "start_line": 1, "end_line": 2}],
              "callers": [caller("h", 1, "decorator"), caller("k", 2, "decorator")],
              "possible_callers": [caller(f"p{i}", 1, resolved=False) for i in range(POSSIBLE_SHOWN + extra)],
              "blind_spots": [], "unmapped_imports": []}
    text = format_report(report)
    assert "h  depth 1  (decorated by it)" in text
    assert "k  depth 2  (through a decoration)" in text and "k  depth 2  (decorated by it)" not in text
    assert f"p{POSSIBLE_SHOWN - 1}  depth 1" in text and f"p{POSSIBLE_SHOWN}  depth 1" not in text
    assert f"… and {extra} more (--json lists them all)" in text
