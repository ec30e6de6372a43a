"""Call-graph resolution rules on a small in-memory Java project."""
import pytest

from helpers.call_graph import caller_rows, edge_rules
from indexer.graph import build_graph, extract_file, resolve

J = "src/main/java/com/ex/"
FILES = {
    J + "model/Response.java": """\
package com.ex.model;

public class Response {
    private PreparedRequest request;
    public Response() {}
    public void close() {}
    public PreparedRequest getRequest() { return request; }
}
""",
    J + "model/PreparedRequest.java": """\
package com.ex.model;

public class PreparedRequest {
    public PreparedRequest copy() { return new PreparedRequest(); }
    public void close() {}
}
""",
    J + "Base.java": """\
package com.ex;

public abstract class Base {
    protected void baseMethod() {}
}
""",
    J + "Session.java": """\
package com.ex;

import com.ex.model.Response;
import com.ex.model.*;
import static com.ex.Util.helper;

public class Session extends Base {
    private Response last;

    public Session() { super(); }

    public void close() { last.close(); }

    public Response send(Response r) {
        r.close();
        PreparedRequest p = r.getRequest().copy();
        helper(1);
        Util.other();
        baseMethod();
        this.baseMethod();
        return new Response();
    }

    public void redirect() {
        Session s = new Session();
        var resp = s.send(null);
        resp.close();
        String x = "a";
        x.trim();
    }

    static int fact(int n) { return n < 2 ? 1 : n * fact(n - 1); }
}
""",
    J + "Util.java": """\
package com.ex;

public class Util {
    public static int helper(int x) { return x; }
    public static void other() { Cycle.b(); }
    static class Inner { void m() { helper(2); } }
}
""",
    J + "Cycle.java": """\
package com.ex;

public class Cycle {
    static void a() { b(); }
    static void b() { Util.other(); }
}
""",
    "src/test/java/com/ex/SessionTest.java": """\
package com.ex;

class SessionTest {
    void t() { new Session().close(); }
}
""",
}
FACTS = [extract_file(p, s) for p, s in FILES.items()]
S = J + "Session.java"


@pytest.fixture(scope="module")
def graph():
    return build_graph(FILES)


def callers(graph, query, **kw):
    return caller_rows(graph, query, strip=J, **kw)


def rules():
    return edge_rules(FACTS)


def test_fields_params_locals_and_return_types(graph):
    assert callers(graph, "Response.close") == {
        ("Session.java", "Session.close", 12, 1, False),
        ("Session.java", "Session.send", 15, 1, False),
        ("Session.java", "Session.redirect", 27, 1, False),
    }
    r = rules()
    assert r[("Session.close", 12, "Response.close")] == "typed"  # implicit this field
    assert r[("Session.redirect", 27, "Response.close")] == "typed"  # var resp = s.send(...)
    assert callers(graph, "PreparedRequest.close") == set()  # ambiguous name, no typed call
    assert callers(graph, "PreparedRequest.copy") == {("Session.java", "Session.send", 16, 1, False)}


def test_static_imports_class_calls_and_outer_class(graph):
    assert callers(graph, "Util.helper") == {
        ("Session.java", "Session.send", 17, 1, False),
        ("Util.java", "Util.Inner.m", 6, 1, False),
    }
    assert rules()[("Session.send", 17, "Util.helper")] == "import"
    assert callers(graph, "Util.other") == {
        ("Session.java", "Session.send", 18, 1, False),
        ("Cycle.java", "Cycle.b", 5, 1, False),
    }


def test_inherited_this_and_super(graph):
    assert callers(graph, "Base.baseMethod") == {("Session.java", "Session.send", 19, 1, False)}
    r = rules()
    assert r[("Session.send", 19, "Base.baseMethod")] == "inherited"
    assert r[("Session.send", 20, "Base.baseMethod")] == "inherited"
    assert callers(graph, "Base") == {("Session.java", "Session.Session", 10, 1, False)}


def test_constructors_and_tests(graph):
    assert callers(graph, "Session.Session") == {
        ("Session.java", "Session.redirect", 25, 1, False),
        ("src/test/java/com/ex/SessionTest.java", "SessionTest.t", 4, 1, True),
    }
    assert callers(graph, "Session.send") == {("Session.java", "Session.redirect", 26, 1, False)}


def test_recursion_cycle_and_depth(graph):
    assert callers(graph, "Session.fact") == set()
    assert callers(graph, "Cycle.b", depth=2) == {
        ("Cycle.java", "Cycle.a", 4, 1, False),
        ("Util.java", "Util.other", 5, 1, False),
        ("Session.java", "Session.send", 18, 2, False),
    }


def test_external_lookup_and_facts(graph):
    edges = {(e.caller_symbol, e.line, e.callee_name): e for e in resolve(FACTS)}
    assert edges[("Session.redirect", 29, "trim")].rule == "external"
    assert [d.symbol for d in graph.find_definitions(S + ":16")] == ["Session.send"]
    assert [d.symbol for d in graph.find_definitions("com.ex.Session.send")] == ["Session.send"]
    assert graph.find_definitions("Session.missing") == []
    f = extract_file(S, FILES[S])
    assert f.package == "com.ex"
    assert [(i.module, i.name, i.static) for i in f.imports] == [
        ("com.ex.model", "Response", False), ("com.ex.model", "*", False),
        ("com.ex.Util", "helper", True)]
    assert extract_file("B.java", "class B { void m( { x.y(; } }") is not None
