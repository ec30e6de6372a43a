"""Call-graph resolution rules on a small in-memory Go module."""
import pytest

from helpers.call_graph import caller_rows, edge_rules
from indexer.graph import build_graph, extract_file, resolve

FILES = {
    "go.mod": "module example.com/app\n\ngo 1.22\n",
    "gin.go": """\
package app

import (
	"fmt"

	"example.com/app/binding"
)

type HandlerFunc func(*Context)

type HandlersChain []HandlerFunc

func (c HandlersChain) Last() HandlerFunc {
	return c[len(c)-1]
}

type errorMsgs []string

func (a errorMsgs) Last() string { return a[0] }

func (a errorMsgs) JSON() string { return a.Last() }

type node struct {
	handlers HandlersChain
}

type RouterGroup struct{}

func (g *RouterGroup) Use() {}

type Engine struct {
	RouterGroup
	pool []int
}

func New() *Engine { return &Engine{} }

func iterate(root *node) {
	h := root.handlers.Last()
	fmt.Println(h)
}

func setup() {
	e := New()
	e.Use()
	b := binding.Default()
	b.Bind()
	var chain HandlersChain
	chain.Last()
}
""",
    "context.go": """\
package app

import "fmt"

type Context struct {
	handlers HandlersChain
	engine   *Engine
}

func (c *Context) Handler() HandlerFunc {
	return c.handlers.Last()
}

func (c *Context) Get(key string) (any, bool) { return nil, false }

func (c *Context) MustGet(key string) any {
	v, _ := c.Get(key)
	return v
}

func getTyped[T any](c *Context, key string) (res T) {
	if v, ok := c.Get(key); ok {
		res, _ = v.(T)
	}
	return
}

func GetString(c *Context) string { return getTyped[string](c, "k") }

func Recovery() HandlerFunc {
	return func(c *Context) {
		defer func() {
			c.Error("x")
		}()
	}
}

func (c *Context) Error(msg string) { fmt.Println(msg) }

func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func ping(n int) { pong(n) }
""",
    "other.go": "package app\n\nfunc pong(n int) { ping(n) }\n",
    "binding/binding.go": """\
package binding

type Binding struct{}

func (Binding) Bind() {}

func Default() Binding { return Binding{} }
""",
    "context_test.go": """\
package app

func TestGet(t *testing.T) {
	c := &Context{}
	c.Get("a")
}
""",
}


@pytest.fixture(scope="module")
def graph():
    return build_graph(FILES)


FACTS = [extract_file(p, s) for p, s in FILES.items()]


def callers(graph, query, **kw):
    return caller_rows(graph, query, **kw)


def rules():
    return edge_rules(FACTS)


def test_named_slice_type_methods_and_field_chains(graph):
    assert callers(graph, "HandlersChain.Last") == {
        ("context.go", "Context.Handler", 11, 1, False),
        ("gin.go", "iterate", 39, 1, False),
        ("gin.go", "setup", 49, 1, False),
    }
    r = rules()
    assert r[("Context.Handler", 11, "HandlersChain.Last")] == "attr-chain"  # c.handlers
    assert r[("iterate", 39, "HandlersChain.Last")] == "attr-chain"  # root *node .handlers
    assert r[("setup", 49, "HandlersChain.Last")] == "typed"  # var chain HandlersChain


def test_ambiguous_last_is_split_by_receiver_type(graph):
    assert callers(graph, "errorMsgs.Last") == {("gin.go", "errorMsgs.JSON", 21, 1, False)}
    assert rules()[("errorMsgs.JSON", 21, "errorMsgs.Last")] == "self"


def test_receiver_param_closure_and_tests(graph):
    assert callers(graph, "Context.Get") == {
        ("context.go", "Context.MustGet", 17, 1, False),
        ("context.go", "getTyped", 22, 1, False),
        ("context_test.go", "TestGet", 5, 1, True),
    }
    # c.Error inside a deferred closure of a func literal belongs to Recovery
    assert callers(graph, "Context.Error") == {("context.go", "Recovery", 33, 1, False)}


def test_package_qualified_and_return_types(graph):
    assert callers(graph, "binding.Default") == {("gin.go", "setup", 46, 1, False)}
    assert callers(graph, "Binding.Bind") == {("gin.go", "setup", 47, 1, False)}
    r = rules()
    assert r[("setup", 46, "Default")] == "package"
    assert r[("setup", 47, "Binding.Bind")] == "typed"  # b := binding.Default()


def test_embedded_struct_method_via_constructor_function(graph):
    assert callers(graph, "RouterGroup.Use") == {("gin.go", "setup", 45, 1, False)}
    assert callers(graph, "New") == {("gin.go", "setup", 44, 1, False)}
    assert rules()[("setup", 44, "New")] == "local"


def test_same_package_across_files_cycle_and_recursion(graph):
    assert callers(graph, "pong", depth=3) == {("context.go", "ping", 47, 1, False)}
    assert callers(graph, "ping", depth=3) == {("other.go", "pong", 3, 1, False)}
    assert rules()[("pong", 3, "ping")] == "package"
    assert callers(graph, "fib") == set()


def test_transitive_depth_two(graph):
    assert callers(graph, "getTyped", depth=2) == {("context.go", "GetString", 28, 1, False)}
    assert callers(graph, "Context.Get", depth=2) == {
        ("context.go", "Context.MustGet", 17, 1, False),
        ("context.go", "getTyped", 22, 1, False),
        ("context_test.go", "TestGet", 5, 1, True),
        ("context.go", "GetString", 28, 2, False),
    }


def test_external_calls(graph):
    edges = {(e.caller_symbol, e.line): e for e in resolve(FACTS)}
    assert edges[("iterate", 40)].rule == "external"  # fmt.Println
    assert edges[("HandlersChain.Last", 14)].rule == "external"  # len builtin


def test_find_definitions_and_facts():
    g = build_graph(FILES)
    assert [d.symbol for d in g.find_definitions("context.go:17")] == ["Context.MustGet"]
    assert [d.symbol for d in g.find_definitions("app.Context.Get")] == ["Context.Get"]
    assert g.find_definitions("Context.Nope") == []
    f = extract_file("gin.go", FILES["gin.go"])
    assert f.package == "app"
    assert [(i.module, i.alias) for i in f.imports] == [("fmt", "fmt"),
                                                        ("example.com/app/binding", "binding")]
    engine = next(d for d in f.definitions if d.symbol == "Engine")
    assert engine.bases == ["RouterGroup"] and engine.attributes["pool"].type == "[]int"
    call = next(c for c in f.calls if c.callee_text == "binding.Default")
    assert call.receiver.kind == "module"


def test_broken_go_does_not_raise():
    f = extract_file("x.go", "package x\nfunc (c *C) M( {\n c.Get(\n}\nfunc ok() { M() }\n")
    assert f is not None and any(d.symbol == "ok" for d in f.definitions)


def test_container_elements_index_and_range():
    g = build_graph({
        "tree.go": """\
package app

type node struct {
	children []*node
	byName   map[string]*node
}

func (n *node) find() {}

func (n *node) walk() {
	n.children[0].find()
	for _, child := range n.children {
		child.find()
	}
	n.byName["x"].find()
}

func other(ns []node) {
	for i := range ns {
		ns[i].find()
	}
}
""",
    })
    d = g.find_definitions("node.find")[0]
    assert [(c.symbol, c.line, c.resolved) for c in g.callers(d, include_unresolved="none")] == [
        ("node.walk", 11, True), ("other", 20, True)]
