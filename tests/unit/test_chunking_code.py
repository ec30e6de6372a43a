"""Tests for tree-sitter code chunking (Python, Go, TypeScript, TSX, JavaScript, Java)."""
import logging

import pytest

from indexer.chunking import chunk_file
from indexer.chunking.code import GROUP_DELIMITER
from indexer.chunking.windows import split_lines


def spans(chunks):
    return [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks]


def by_symbol(chunks, symbol, kind=None):
    found = [c for c in chunks if c.symbol == symbol and (kind is None or c.kind == kind)]
    assert len(found) == 1, (symbol, spans(chunks))
    return found[0]


def check_invariants(chunks, text):
    """Exact text for line-range chunks, and every non-blank line covered."""
    lines = split_lines(text)
    covered = set()
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(lines), c
        if c.kind in ("class_signature", "file_header"):
            ranges = c.extra["ranges"]
            assert c.text == "\n".join("\n".join(lines[s - 1:e]) for s, e in ranges)
        else:
            ranges = [[c.start_line, c.end_line]]
            assert c.text == "\n".join(lines[c.start_line - 1:c.end_line]), c.symbol
        for s, e in ranges:
            covered.update(range(s, e + 1))
    missing = [no for no, line in enumerate(lines, 1)
               if line.strip() and no not in covered and not GROUP_DELIMITER.fullmatch(line)]
    assert missing == []


# --------------------------------------------------------------------------- Python
PYTHON = '''\
#!/usr/bin/env python
"""Sessions module."""
import os
from typing import (
    Any,
)

DEFAULT_TIMEOUT = 30  # seconds


# Merge two settings.
# Used by Session.
@cache
def merge_setting(a, b):
    """Return the merged setting."""
    def pick(x):
        return x
    return pick(a or b)


class Session(SessionRedirectMixin):
    """A requests session."""

    __attrs__ = ["headers"]

    def __init__(self):
        self.headers = {}

    # Send a request.
    @property
    def send(self, request,
             **kwargs):
        return request

    class Adapter:
        def mount(self, prefix):
            return prefix


if __name__ == "__main__":
    merge_setting(1, 2)
'''


def test_python_small_class_is_one_chunk():
    chunks = chunk_file("requests/sessions.py", PYTHON)
    assert spans(chunks) == [
        ("file_header", "sessions", 1, 8),
        ("function", "merge_setting", 11, 18),
        ("class", "Session", 21, 37),
        ("window", "", 40, 41),
    ]
    check_invariants(chunks, PYTHON)
    header = chunks[0]
    assert header.extra["ranges"] == [[1, 6], [8, 8]]
    assert header.docstring == "Sessions module."
    func = chunks[1]
    assert func.text.startswith("# Merge two settings.\n# Used by Session.\n@cache\ndef merge")
    assert "def pick(x):" in func.text  # nested function stays inside
    assert func.signature == "def merge_setting(a, b):"
    assert func.docstring == "Return the merged setting."
    cls = chunks[2]
    assert cls.signature == "class Session(SessionRedirectMixin):"
    assert cls.docstring == "A requests session."
    assert cls.context == ""


def test_python_large_class_is_split():
    chunks = chunk_file("requests/sessions.py", PYTHON, max_class_lines=10)
    assert spans(chunks) == [
        ("file_header", "sessions", 1, 8),
        ("function", "merge_setting", 11, 18),
        ("class_signature", "Session", 21, 24),
        ("method", "Session.__init__", 26, 27),
        ("method", "Session.send", 29, 33),
        ("class", "Session.Adapter", 35, 37),
        ("window", "", 40, 41),
    ]
    check_invariants(chunks, PYTHON)
    outline = chunks[2]
    assert outline.text == (
        'class Session(SessionRedirectMixin):\n'
        '    """A requests session."""\n'
        '    __attrs__ = ["headers"]\n'
        '    def __init__(self):\n'
        '    @property\n'
        '    def send(self, request,\n'
        '             **kwargs):\n'
        '    class Adapter:'
    )
    send = by_symbol(chunks, "Session.send")
    assert send.context == "class Session(SessionRedirectMixin):"
    assert send.text.startswith("    # Send a request.\n    @property\n")
    assert send.signature == "def send(self, request,\n             **kwargs):"
    assert send.docstring == "Send a request."
    assert by_symbol(chunks, "Session.Adapter").context == "class Session(SessionRedirectMixin):"


def test_python_nested_large_classes_recurse():
    methods = "\n".join(f"        def m{i}(self):\n            return {i}\n" for i in range(3))
    text = f"class Outer:\n    x = 1\n\n    class Inner:\n{methods}\n    def done(self):\n        pass\n"
    chunks = chunk_file("n.py", text, max_class_lines=5)
    assert spans(chunks) == [
        ("class_signature", "Outer", 1, 2),
        ("class_signature", "Outer.Inner", 4, 4),
        ("method", "Outer.Inner.m0", 5, 6),
        ("method", "Outer.Inner.m1", 8, 9),
        ("method", "Outer.Inner.m2", 11, 12),
        ("method", "Outer.done", 14, 15),
    ]
    assert by_symbol(chunks, "Outer.Inner.m1").context == "class Inner:"
    assert by_symbol(chunks, "Outer.done").context == "class Outer:"
    check_invariants(chunks, text)


def test_long_function_is_windowed():
    body = "\n".join(f"    x{i} = {i}" for i in range(1, 240))
    text = f"import os\n\n# Big one.\ndef big():\n{body}\n    return x1\n\n\ndef after():\n    pass\n"
    chunks = chunk_file("big.py", text)
    assert [(c.kind, c.symbol, c.start_line, c.end_line, c.extra) for c in chunks] == [
        ("file_header", "big", 1, 1, {"ranges": [[1, 1]]}),
        ("function", "big", 3, 102, {"part": 1}),
        ("function", "big", 83, 182, {"part": 2}),
        ("function", "big", 163, 244, {"part": 3}),
        ("function", "after", 247, 248, {}),
    ]
    assert chunks[1].text.startswith("# Big one.\ndef big():")
    assert chunks[1].docstring == "Big one." and chunks[2].docstring == ""
    assert all(c.signature == "def big():" for c in chunks[1:4])
    check_invariants(chunks, text)


def test_broken_python_keeps_intact_functions(caplog):
    text = (
        "def good_one():\n    return 1\n\n"
        "def broken(:\n    return (\n\n"
        "def good_two(x):\n    return x\n"
    )
    with caplog.at_level(logging.WARNING):
        chunks = chunk_file("broken.py", text)
    assert "syntax errors" in caplog.text
    symbols = {c.symbol: (c.start_line, c.end_line) for c in chunks if c.kind == "function"}
    assert symbols["good_one"] == (1, 2)
    assert symbols["good_two"] == (7, 8)
    check_invariants(chunks, text)


def test_empty_and_comment_only_files():
    assert chunk_file("empty.py", "") == []
    assert chunk_file("blank.go", "\n\n  \n") == []
    text = "# just a note\n# and another\n\n# third\n"
    chunks = chunk_file("notes.py", text)
    assert spans(chunks) == [("file_header", "notes", 1, 4)]
    assert chunks[0].text == "# just a note\n# and another\n# third"
    check_invariants(chunks, text)


def test_init_module_name():
    chunks = chunk_file("pkg/requests/__init__.py", "import os\n")
    assert spans(chunks) == [("file_header", "requests", 1, 1)]


@pytest.mark.parametrize("path, text", [
    ("x.py", "def f(\n" * 500),
    ("x.py", "x = '" + "a" * 200_000 + "\n"),
    ("x.go", "package main\nfunc (((( {\n\x00\x01 }}}}\n"),
    ("x.ts", "class { ( ] } =>\n" * 50),
    ("x.tsx", "<div>{</span>\n"),
    ("x.java", "public class { void m( }\n"),
    ("x.js", "\ud800 broken surrogate \n"),
    ("x.md", "```\n# open fence never closed\n"),
    ("x.rst", "===\n\n===\n"),
    ("x.py", "\r\n".join(["def f():", "    return 1", ""])),
])
def test_chunk_file_never_raises(path, text):
    chunks = chunk_file(path, text)
    assert chunks, "non-blank text must give at least one chunk"
    lines = split_lines(text)
    covered = {n for c in chunks for s, e in c.extra.get("ranges", [[c.start_line, c.end_line]])
               for n in range(s, e + 1)}
    assert all(n in covered for n, line in enumerate(lines, 1) if line.strip())


# --------------------------------------------------------------------------- Go
GO = """\
// Copyright 2014 Manu Martinez-Almeida.

// Package gin implements a HTTP web framework.
package gin

import (
\t"fmt"
)

const abortIndex int8 = 63

// HandlerFunc defines the handler used by gin middleware.
type HandlerFunc func(*Context)

// Context is the most important part of gin.
type Context struct {
\tindex int8
}

// Copy returns a copy of the current context.
func (c *Context) Copy() *Context {
\tcp := Context{index: c.index}
\treturn &cp
}

func (e *Engine[T]) Run(addr string) error { return nil }

/* Default returns an Engine
   with middleware attached. */
func Default() *Engine {
\tfmt.Println("debug")
\treturn New()
}
"""


def test_go_chunks():
    chunks = chunk_file("gin/context.go", GO)
    assert spans(chunks) == [
        ("file_header", "gin", 1, 13),
        ("class", "Context", 15, 18),
        ("method", "Context.Copy", 20, 24),
        ("method", "Engine.Run", 26, 26),
        ("function", "Default", 28, 33),
    ]
    check_invariants(chunks, GO)
    header = chunks[0]
    assert header.extra["ranges"] == [[1, 1], [3, 4], [6, 8], [10, 10], [12, 13]]
    assert header.docstring == "Package gin implements a HTTP web framework."
    ctx = chunks[1]
    assert ctx.signature == "type Context struct"
    assert ctx.docstring == "Context is the most important part of gin."
    copy = chunks[2]
    assert copy.context == "type Context struct"
    assert copy.signature == "func (c *Context) Copy() *Context"
    assert copy.text.startswith("// Copy returns a copy")
    assert chunks[3].context == "type Engine"  # declared in another file
    assert chunks[4].docstring == "Default returns an Engine\nwith middleware attached."


GO_GROUPED = """\
package shop

type (
\t// Cart holds items.
\tCart struct {
\t\tItems []Item
\t}
\t// Pricer prices things.
\tPricer interface {
\t\tPrice(i Item) Money
\t}
\tID string
)

func (c *Cart) Total() Money {
\treturn 0
}
"""


def test_go_grouped_type_declaration_gives_one_chunk_per_type():
    chunks = chunk_file("shop/cart.go", GO_GROUPED)
    assert spans(chunks) == [
        ("file_header", "shop", 1, 1),
        ("class", "Cart", 4, 7),
        ("class", "Pricer", 8, 11),
        ("window", "", 12, 12),
        ("method", "Cart.Total", 15, 17),
    ]
    check_invariants(chunks, GO_GROUPED)
    assert chunks[2].docstring == "Pricer prices things." and chunks[2].signature == "type Pricer interface"
    assert chunks[4].context == "type Cart struct"
    # a non-struct type after the first definition is a window of its own, not a header
    # piece: the header's line range stays the header's lines
    assert "ID string" in chunks[3].text and "ID string" not in chunks[0].text


GO_LATE_CONSTANTS = """\
package cmd

import "fmt"

func Run() {
\tfmt.Println(name)
}

var name = "x"

func Stop() {}

const Version = "1.0"
"""


def test_header_chunk_lines_are_the_header_not_the_whole_file():
    chunks = chunk_file("cmd/command.go", GO_LATE_CONSTANTS)
    assert spans(chunks) == [
        ("file_header", "cmd", 1, 3),
        ("function", "Run", 5, 7),
        ("window", "", 9, 9),
        ("function", "Stop", 11, 11),
        ("window", "", 13, 13),
    ]
    check_invariants(chunks, GO_LATE_CONSTANTS)


# --------------------------------------------------------------------------- TypeScript
TYPESCRIPT = """\
import { Request } from "./request";

export const LIMIT = 3;

/** Adds two numbers. */
export function add(a: number, b: number): number {
  return a + b;
}

// Multiplies.
export const mul = (a: number, b: number): number => {
  return a * b;
};

const div = function (a: number, b: number) { return a / b; };

interface Shape {
  area(): number;
}

@Component({})
export class Circle extends Base implements Shape {
  radius = 1;
  handle = () => {
    return 2;
  };
  /** The area. */
  area(): number {
    return 3.14;
  }
}

console.log(add(1, 2));
"""


def test_typescript_chunks():
    chunks = chunk_file("src/math.ts", TYPESCRIPT)
    assert spans(chunks) == [
        ("file_header", "math", 1, 3),
        ("function", "add", 5, 8),
        ("function", "mul", 10, 13),
        ("function", "div", 15, 15),
        ("class", "Shape", 17, 19),
        ("class", "Circle", 21, 31),
        ("window", "", 33, 33),
    ]
    check_invariants(chunks, TYPESCRIPT)
    assert chunks[1].docstring == "Adds two numbers."
    assert chunks[1].signature == "function add(a: number, b: number): number"
    assert chunks[2].docstring == "Multiplies."
    assert chunks[5].text.startswith("@Component({})\nexport class Circle")


def test_typescript_large_class_split():
    chunks = chunk_file("src/math.ts", TYPESCRIPT, max_class_lines=5)
    split = [c for c in chunks if c.symbol.startswith("Circle")]
    assert spans(split) == [
        ("class_signature", "Circle", 21, 23),
        ("method", "Circle.handle", 24, 26),
        ("method", "Circle.area", 27, 30),
    ]
    assert split[0].text == (
        "@Component({})\nexport class Circle extends Base implements Shape {\n"
        "  radius = 1;\n  handle = () => {\n  area(): number {\n}")
    assert split[2].context == "class Circle extends Base implements Shape {"
    assert split[2].docstring == "The area."
    check_invariants(chunks, TYPESCRIPT)


TSX = """\
import React from "react";

type Props = { name: string };

// Greets someone.
export const Hello = ({ name }: Props) => {
  return <div className="hello">Hello {name}</div>;
};

export default class Counter extends React.Component<Props> {
  state = { n: 0 };
  render() {
    return <button onClick={() => this.setState({ n: 1 })}>{this.state.n}</button>;
  }
}
"""


def test_tsx_chunks():
    chunks = chunk_file("ui/Hello.tsx", TSX)
    assert spans(chunks) == [
        ("file_header", "Hello", 1, 3),
        ("function", "Hello", 5, 8),
        ("class", "Counter", 10, 15),
    ]
    assert all(c.language == "tsx" for c in chunks)
    check_invariants(chunks, TSX)
    split = chunk_file("ui/Hello.tsx", TSX, max_class_lines=3)
    assert spans(split)[2:] == [("class_signature", "Counter", 10, 11),
                                ("method", "Counter.render", 12, 14)]
    assert split[3].context == "class Counter extends React.Component<Props> {"


# --------------------------------------------------------------------------- JavaScript
JAVASCRIPT = """\
'use strict';
const path = require('path');

/**
 * Router dispatches requests.
 */
class Router {
  constructor() {
    this.routes = [];
  }

  // Register a route.
  get(p, fn) {
    this.routes.push([p, fn]);
  }
}

function* ids() {
  yield 1;
}

export const handler = async (req) => {
  return req;
};

module.exports = { Router };
"""


def test_javascript_chunks():
    chunks = chunk_file("lib/router.js", JAVASCRIPT)
    assert spans(chunks) == [
        ("file_header", "router", 1, 2),
        ("class", "Router", 4, 16),
        ("function", "ids", 18, 20),
        ("function", "handler", 22, 24),
        ("window", "", 26, 26),
    ]
    assert chunks[1].docstring == "Router dispatches requests."
    check_invariants(chunks, JAVASCRIPT)
    split = chunk_file("lib/router.js", JAVASCRIPT, max_class_lines=5)
    assert spans(split)[1:4] == [
        ("class_signature", "Router", 4, 7),
        ("method", "Router.constructor", 8, 10),
        ("method", "Router.get", 12, 15),
    ]
    assert split[3].context == "class Router {"
    assert split[3].text.startswith("  // Register a route.\n  get(p, fn) {")
    check_invariants(split, JAVASCRIPT)


# --------------------------------------------------------------------------- Java
JAVA = """\
package com.example.http;

import java.util.List;

/**
 * A client session.
 */
@Entity
public class Session extends Base implements Closeable {
    private int timeout = 30;

    // Create a session.
    public Session() {
        this.timeout = 10;
    }

    /** Send a request. */
    @Override
    public Response send(Request r) {
        return null;
    }

    interface Hook {
        void call();
    }

    private static final int MAX = 5;
}
"""


def test_java_small_and_large_class():
    chunks = chunk_file("src/Session.java", JAVA)
    assert spans(chunks) == [("file_header", "com.example.http", 1, 3),
                             ("class", "Session", 5, 28)]
    assert chunks[1].docstring == "A client session."
    assert chunks[1].signature == "public class Session extends Base implements Closeable"
    check_invariants(chunks, JAVA)

    split = chunk_file("src/Session.java", JAVA, max_class_lines=10)
    assert spans(split) == [
        ("file_header", "com.example.http", 1, 3),
        ("class_signature", "Session", 5, 10),
        ("method", "Session.Session", 12, 15),
        ("method", "Session.send", 17, 21),
        ("class", "Session.Hook", 23, 25),
    ]
    outline = split[1]
    assert outline.extra["ranges"] == [[5, 10], [13, 13], [18, 19], [23, 23], [27, 28]]
    assert outline.text.endswith(
        "    private int timeout = 30;\n    public Session() {\n    @Override\n"
        "    public Response send(Request r) {\n    interface Hook {\n"
        "    private static final int MAX = 5;\n}")
    send = split[3]
    assert send.context == "public class Session extends Base implements Closeable {"
    assert send.signature == "public Response send(Request r)"
    assert send.docstring == "Send a request."
    assert send.text.startswith("    /** Send a request. */\n    @Override\n")
    check_invariants(split, JAVA)


@pytest.mark.parametrize("path, text", [
    ("a.py", PYTHON), ("a.go", GO), ("a.ts", TYPESCRIPT), ("a.tsx", TSX),
    ("a.js", JAVASCRIPT), ("A.java", JAVA),
])
@pytest.mark.parametrize("max_class_lines, max_chunk_lines", [(2, 4), (2, 150), (80, 3)])
def test_coverage_property(path, text, max_class_lines, max_chunk_lines):
    chunks = chunk_file(path, text, max_class_lines=max_class_lines,
                        max_chunk_lines=max_chunk_lines)
    check_invariants(chunks, text)
    assert len({c.kind for c in chunks}) >= 2
