"""Call-graph resolution rules on a small in-memory Python repository."""
import json

import pytest

from indexer.graph import build_graph, extract_file, resolve
from indexer.graph.facts import FileFacts

FILES = {
    "pkg/__init__.py": "from .models import Response\n",
    "pkg/models.py": '''\
class PreparedRequest:
    def copy(self) -> "PreparedRequest":
        return PreparedRequest()

    def prepare(self):
        self.headers = Headers()
        self.headers.copy()


class Headers:
    def copy(self):
        return dict(self)


class Response:
    request: PreparedRequest

    def __init__(self):
        self.raw = None

    def close(self):
        self.raw.close()

    def __exit__(self, *args):
        self.close()
''',
    "pkg/base.py": '''\
class Base:
    def base_method(self):
        pass


class Child(Base):
    def run(self):
        super().base_method()
''',
    "pkg/utils.py": '''\
import json
from . import sessions


def helper(x):
    return json.dumps(x)


def ping(n):
    sessions.pong(n)


def unique_target():
    pass
''',
    "pkg/sessions.py": '''\
import os
from . import utils
from .utils import helper as _helper, ping
from .models import Response, PreparedRequest
from .base import Base


class Session(Base):
    def close(self):
        for adapter in self.adapters.values():
            adapter.close()

    def __exit__(self, *args):
        self.close()

    def send(self, req: PreparedRequest) -> Response:
        r = Response()
        _helper(r)
        utils.helper(r)
        self.base_method()
        return r

    def redirect(self, resp: Response, thing):
        resp.close()
        new = resp.request.copy()
        os.close(3)
        result = self.send(new)
        result.close()
        with Session() as s:
            s.send(new)
        thing.unique_target()

    def nested(self):
        def inner():
            return 1
        return inner()


def pong(n):
    ping(n)


def fact(n):
    return 1 if n < 2 else n * fact(n - 1)
''',
    "tests/test_sessions.py": '''\
from pkg.utils import helper


def test_helper():
    helper(1)
''',
}


@pytest.fixture(scope="module")
def graph():
    return build_graph(FILES)


def callers(graph, query, path=None, **kw):
    defs = [d for d in graph.find_definitions(query) if path is None or d.path == path]
    assert len(defs) == 1, defs
    return {(c.path, c.symbol, c.line, c.depth, c.resolved) for c in graph.callers(defs[0], **kw)}


def test_import_alias_and_module_qualified_calls(graph):
    assert callers(graph, "utils.helper") == {
        ("pkg/sessions.py", "Session.send", 18, 1, True),
        ("tests/test_sessions.py", "test_helper", 5, 1, True),
    }
    rules = edge_rules()
    assert rules[("Session.send", 18, "helper")] == "import"  # _helper(r): aliased import
    assert rules[("Session.send", 19, "helper")] == "module"  # utils.helper(r)
    assert rules[("test_helper", 5, "helper")] == "import"  # absolute `from pkg.utils import`


def test_test_callers_are_flagged(graph):
    d = graph.find_definitions("helper")[0]
    flags = {c.symbol: c.is_test for c in graph.callers(d)}
    assert flags == {"Session.send": False, "test_helper": True}


def test_self_method_and_constructor(graph):
    assert callers(graph, "Session.send") == {("pkg/sessions.py", "Session.redirect", 27, 1, True)}
    assert callers(graph, "pkg.sessions.Session") == {("pkg/sessions.py", "Session.redirect", 29, 1, True)}
    # Response() is a constructor call: the class and its __init__
    assert callers(graph, "Response") == {("pkg/sessions.py", "Session.send", 17, 1, True)}
    assert callers(graph, "Response.__init__") == {("pkg/sessions.py", "Session.send", 17, 1, True)}
    rules = edge_rules()
    assert rules[("Session.redirect", 27, "send")] == "self"
    assert rules[("Session.redirect", 30, "send")] == "typed"  # with Session() as s
    assert rules[("Session.send", 17, "Response")] == "constructor"


def test_ambiguous_close_uses_receiver_types(graph):
    # Response.close: self.close() in __exit__, typed param resp, return type of self.send()
    assert callers(graph, "Response.close") == {
        ("pkg/models.py", "Response.__exit__", 25, 1, True),
        ("pkg/sessions.py", "Session.redirect", 24, 1, True),
    }
    rules = edge_rules()
    assert rules[("Session.redirect", 24, "close")] == "typed"  # resp: Response
    assert rules[("Session.redirect", 28, "close")] == "typed"  # result = self.send(...) -> Response
    assert callers(graph, "Session.close") == {("pkg/sessions.py", "Session.__exit__", 14, 1, True)}
    # self.raw.close() has an unknown receiver and `close` is ambiguous: only a possibility
    # (adapter.close() inside Session.close is not listed: a definition never calls itself)
    d = graph.find_definitions("Session.close")[0]
    assert [(c.path, c.symbol, c.resolved) for c in graph.possible_callers(d)] == [
        ("pkg/models.py", "Response.close", False)]
    d = graph.find_definitions("Response.close")[0]
    assert [(c.path, c.symbol, c.line) for c in graph.possible_callers(d)] == [
        ("pkg/sessions.py", "Session.close", 11)]
    # self.raw.close() (raw is assigned None only) and os.close() never match
    assert not any(c.symbol == "Response.close" for c in
                   graph.callers(graph.find_definitions("Response.close")[0], include_unresolved="all"))


def test_attribute_chain_through_class_annotation(graph):
    assert callers(graph, "PreparedRequest.copy") == {("pkg/sessions.py", "Session.redirect", 25, 1, True)}
    assert edge_rules()[("Session.redirect", 25, "copy")] == "attr-chain"
    # self.headers = Headers() makes self.headers.copy() a Headers.copy call
    assert callers(graph, "Headers.copy") == {("pkg/models.py", "PreparedRequest.prepare", 7, 1, True)}


def test_inherited_and_super(graph):
    assert callers(graph, "Base.base_method") == {
        ("pkg/base.py", "Child.run", 8, 1, True),
        ("pkg/sessions.py", "Session.send", 20, 1, True),
    }
    rules = edge_rules()
    assert rules[("Child.run", 8, "base_method")] == "super"
    assert rules[("Session.send", 20, "base_method")] == "inherited"


def test_a_member_call_on_an_unknown_receiver_is_only_a_possible_caller(graph):
    # `thing.unique_target()` with `thing` unknown: the name is unique in the repo, but a
    # member call of an unevaluated receiver is as likely a dict's or a library's method
    assert callers(graph, "unique_target") == set()
    assert callers(graph, "unique_target", include_unresolved="all") == set()
    d = graph.find_definitions("unique_target")[0]
    assert {(c.path, c.symbol, c.line, c.resolved) for c in graph.possible_callers(d)} == {
        ("pkg/sessions.py", "Session.redirect", 31, False)}


def test_nested_function_call_belongs_to_outer(graph):
    assert callers(graph, "Session.nested.inner") == {("pkg/sessions.py", "Session.nested", 36, 1, True)}


def test_recursion_is_not_a_caller(graph):
    assert callers(graph, "fact") == set()


def test_cycle_across_files_and_depth(graph):
    # utils.ping -> sessions.pong -> utils.ping: BFS stops at the start, no duplicates
    assert callers(graph, "ping") == {("pkg/sessions.py", "pong", 40, 1, True)}
    assert callers(graph, "ping", depth=5) == {("pkg/sessions.py", "pong", 40, 1, True)}
    assert callers(graph, "pong", depth=5) == {("pkg/utils.py", "ping", 10, 1, True)}


def test_transitive_depth_two(graph):
    assert callers(graph, "utils.helper", depth=2) == {
        ("pkg/sessions.py", "Session.send", 18, 1, True),
        ("tests/test_sessions.py", "test_helper", 5, 1, True),
        ("pkg/sessions.py", "Session.redirect", 27, 2, True),
    }


def test_find_definitions_forms(graph):
    assert [(d.path, d.symbol) for d in graph.find_definitions("pkg/models.py:22")] == [
        ("pkg/models.py", "Response.close")]
    assert [(d.path, d.symbol) for d in graph.find_definitions("pkg/models.py:15")] == [
        ("pkg/models.py", "Response")]
    assert [d.symbol for d in graph.find_definitions("pkg.sessions.Session.close")] == ["Session.close"]
    assert sorted(d.symbol for d in graph.find_definitions("close")) == ["Response.close", "Session.close"]
    assert graph.find_definitions("no_such_symbol") == []
    assert graph.find_definitions("pkg/models.py:999") == []


def test_external_calls_are_not_name_matched(graph):
    edges = {(e.caller_symbol, e.line): e for e in resolve(FACTS)}
    assert (edges[("Session.redirect", 26)].rule, edges[("Session.redirect", 26)].resolved) == (
        "external", False)  # os.close
    assert edges[("helper", 6)].rule == "external"  # json.dumps
    assert edges[("Response.close", 22)].rule == "receiver-unknown"  # self.raw (None) .close()


FACTS = [extract_file(p, s) for p, s in FILES.items()]


def edge_rules():
    """{(caller symbol, line, callee symbol): rule} of the resolved edges."""
    return {(e.caller_symbol, e.line, e.callee_symbol.split(".")[-1]): e.rule
            for e in resolve(FACTS) if e.resolved}


def test_facts_round_trip_and_relative_imports():
    f = extract_file("src/requests/sessions.py",
                     "from ._types import is_prepared as _is_prepared\nfrom .. import x\n")
    assert [(i.module, i.name, i.alias, i.relative) for i in f.imports] == [
        ("src/requests/_types", "is_prepared", "_is_prepared", True), ("src", "x", "", True)]
    f = extract_file("pkg/sessions.py", FILES["pkg/sessions.py"])
    again = FileFacts.from_dict(json.loads(json.dumps(f.to_dict())))
    assert again == f
    call = next(c for c in f.calls if c.callee_text == "resp.request.copy")
    assert call.receiver.to_dict() == {"kind": "type", "name": "resp", "type": "Response",
                                       "attrs": ["request"]}


def test_import_names_and_call_site_dict_format():
    """``import``/``from ... import`` read names and aliases alike; a call site's dict (the
    cached facts' format) is its caller and line, then the called expression (``new``
    only when set), and reads back equal."""
    from indexer.graph.facts import R_IDENT, R_NAME, CallSite, Receiver

    f = extract_file("app/main.py", "import os.path as p, json\nfrom app.util import a as b, c\n")
    assert [(i.module, i.name, i.alias) for i in f.imports] == [
        ("os.path", "", "p"), ("json", "", ""), ("app.util", "a", "b"), ("app.util", "c", "")]
    site = CallSite("A.m", 3, "Foo", "Foo", Receiver(R_NAME), new=True)
    assert list(site.to_dict().items()) == [("caller_symbol", "A.m"), ("line", 3), ("callee_name", "Foo"),
                                            ("callee_text", "Foo"), ("receiver", {"kind": "name"}), ("new", True)]
    plain = CallSite("", 1, "f", "x.f", Receiver(R_IDENT, "x"))
    assert plain.to_dict() == {"caller_symbol": "", "line": 1, "callee_name": "f", "callee_text": "x.f",
                               "receiver": {"kind": "ident", "name": "x"}}
    assert CallSite.from_dict(site.to_dict()) == site and CallSite.from_dict(plain.to_dict()) == plain


def test_broken_syntax_does_not_raise():
    f = extract_file("bad.py", "def ok():\n    helper(\n\nclass (:\n  def x(self) pass\n")
    assert f is not None and f.path == "bad.py"
    assert extract_file("README.md", "# hi") is None


def test_container_elements_for_and_subscript():
    g = build_graph({"m.py": '''\
class Item:
    def go(self):
        pass


class Other:
    def go(self):
        pass


class Box:
    items: list[Item]
    named: dict[str, Item]

    def run(self, others: "list[Other]"):
        for it in self.items:
            it.go()
        self.named["a"].go()
        for o in others:
            o.go()
'''})
    item, other = g.find_definitions("Item.go")[0], g.find_definitions("Other.go")[0]
    assert [(c.symbol, c.line) for c in g.callers(item)] == [("Box.run", 17)]
    assert [(c.symbol, c.line) for c in g.callers(other)] == [("Box.run", 20)]


def test_namespace_package_without_init_resolves_but_stdlib_stays_external():
    """PEP 420: ``svc/`` has no ``__init__.py``; ``from svc import billing`` and
    ``import svc.billing`` still reach the repo module, while ``import json`` (no repo
    directory of that name) stays external."""
    g = build_graph({
        "svc/billing.py": "def charge(amount):\n    return amount\n",
        "svc/api.py": ("import json\nfrom svc import billing\nimport svc.billing as b\n\n"
                       "def pay(x):\n    billing.charge(x)\n    b.charge(x)\n    return json.dumps(x)\n"),
    })
    target = g.find_definitions("charge")[0]
    callers = g.callers(target)
    assert [(c.path, c.symbol, c.line, c.resolved) for c in callers] == [("svc/api.py", "pay", 6, True)]
    rules = {e.callee_name: e.rule for es in g.incoming.values() for e in es}
    assert "dumps" not in rules  # json.dumps is not resolved into the repo
