"""Call-graph resolution rules on a small in-memory TypeScript/JavaScript project."""
import pytest

from helpers.call_graph import caller_rows, edge_rules
from indexer.graph import build_graph, extract_file, resolve

FILES = {
    "src/models.ts": """\
export class Response {
  request: PreparedRequest;
  close(): void {}
  copy(): Response { return new Response(); }
}

export class PreparedRequest {
  copy(): PreparedRequest { return new PreparedRequest(); }
}

export function helper(x: number): number { return x; }

export const arrow = (x: number) => helper(x);
""",
    "src/base.ts": """\
export default class Base {
  baseMethod(): void {}
}
""",
    "src/session.ts": """\
import { Response as Resp, helper as h, PreparedRequest } from './models';
import * as models from './models';
import Base from './base';

export class Session extends Base {
  private last: Resp;
  constructor(private req: PreparedRequest) { super(); }
  close(): void { this.last.close(); }
  send(r: Resp): Resp {
    r.close();
    const p = r.request.copy();
    this.req.copy();
    h(1);
    models.arrow(2);
    this.baseMethod();
    return new Resp();
  }
  redirect(): void {
    const s = new Session(new PreparedRequest());
    s.send(s.send(new Resp()));
    JSON.stringify({});
  }
}

export function fact(n: number): number { return n < 2 ? 1 : n * fact(n - 1); }
""",
    "src/cycle_a.ts": "import { b } from './cycle_b';\nexport function a(n: number) { b(n); }\n",
    "src/cycle_b.js": "const { a } = require('./cycle_a');\nfunction b(n) { a(n); }\nmodule.exports = { b };\n",
    "src/session.test.ts": """\
import { Session } from './session';
function run() {
  const s = new Session(null as any);
  s.redirect();
}
""",
}
FACTS = [extract_file(p, s) for p, s in FILES.items()]


@pytest.fixture(scope="module")
def graph():
    return build_graph(FILES)


def callers(graph, query, **kw):
    return caller_rows(graph, query, **kw)


def rules():
    return edge_rules(FACTS)


def test_typed_params_fields_and_parameter_properties(graph):
    assert callers(graph, "Response.close") == {
        ("src/session.ts", "Session.close", 8, 1, False),
        ("src/session.ts", "Session.send", 10, 1, False),
    }
    assert callers(graph, "PreparedRequest.copy") == {("src/session.ts", "Session.send", 11, 1, False)}
    r = rules()
    assert r[("Session.close", 8, "Response.close")] == "attr-chain"  # this.last: Resp
    assert r[("Session.send", 10, "Response.close")] == "typed"  # r: Resp (aliased import)
    assert r[("Session.send", 11, "PreparedRequest.copy")] == "attr-chain"  # r.request
    assert r[("Session.send", 12, "PreparedRequest.copy")] == "attr-chain"  # this.req (ctor param)


def test_ambiguous_copy_not_name_matched(graph):
    assert callers(graph, "Response.copy") == set()


def test_aliases_namespaces_and_same_file(graph):
    assert callers(graph, "helper") == {
        ("src/models.ts", "arrow", 13, 1, False),
        ("src/session.ts", "Session.send", 13, 1, False),
    }
    assert callers(graph, "arrow") == {("src/session.ts", "Session.send", 14, 1, False)}
    r = rules()
    assert r[("Session.send", 13, "helper")] == "import"
    assert r[("Session.send", 14, "arrow")] == "module"
    assert r[("arrow", 13, "helper")] == "local"


def test_inherited_via_default_import_and_super(graph):
    assert callers(graph, "Base.baseMethod") == {("src/session.ts", "Session.send", 15, 1, False)}
    assert rules()[("Session.send", 15, "Base.baseMethod")] == "inherited"
    assert callers(graph, "Base") == {("src/session.ts", "Session.constructor", 7, 1, False)}


def test_new_and_this_methods(graph):
    assert callers(graph, "session.Session") == {
        ("src/session.ts", "Session.redirect", 19, 1, False),
        ("src/session.test.ts", "run", 3, 1, True),
    }
    assert callers(graph, "Session.send") == {("src/session.ts", "Session.redirect", 20, 1, False)}
    assert callers(graph, "Session.constructor") == {
        ("src/session.ts", "Session.redirect", 19, 1, False),
        ("src/session.test.ts", "run", 3, 1, True),
    }


def test_recursion_cycle_require_and_depth(graph):
    assert callers(graph, "fact") == set()
    assert callers(graph, "a", depth=4) == {("src/cycle_b.js", "b", 2, 1, False)}
    assert callers(graph, "b", depth=4) == {("src/cycle_a.ts", "a", 2, 1, False)}
    assert callers(graph, "helper", depth=2) == {
        ("src/models.ts", "arrow", 13, 1, False),
        ("src/session.ts", "Session.send", 13, 1, False),
        ("src/session.ts", "Session.redirect", 20, 2, False),
    }


def test_external_and_lookup(graph):
    edges = {(e.caller_symbol, e.line, e.callee_name): e for e in resolve(FACTS)}
    assert edges[("Session.redirect", 21, "stringify")].rule == "external"
    assert [d.symbol for d in graph.find_definitions("src/session.ts:10")] == ["Session.send"]
    assert graph.find_definitions("Session.nothing") == []


def test_import_facts():
    f = extract_file("src/app/x.ts", "import D, {a as b} from '../m';\nimport * as ns from 'lodash';\n"
                                     "const {q, r: s} = require('./z');\n")
    assert [(i.module, i.name, i.alias, i.relative) for i in f.imports] == [
        ("src/m", "default", "D", True), ("src/m", "a", "b", True), ("lodash", "", "ns", False),
        ("src/app/z", "q", "", True), ("src/app/z", "r", "s", True)]
    assert extract_file("bad.tsx", "export function f( { return <div>; }\nclass {") is not None
