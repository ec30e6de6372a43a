"""Each file of an indexing run is parsed by tree-sitter once: the chunker's tree is the
one the call-graph extractor walks (indexer.syntax)."""
from __future__ import annotations

from indexer.models import Document, Skips
from indexer.stages import ParseState, iter_documents
from indexer.syntax import parses_on_this_thread

FILES = {
    "svc/orders.py": "import json\n\nclass Orders:\n    def total(self, items):\n        return sum(i.price for i in items)\n\n"
                     "def dump(o):\n    return json.dumps(Orders().total(o))\n",
    "cmd/main.go": "package main\n\nimport \"fmt\"\n\nfunc hello(n string) string {\n\treturn fmt.Sprintf(\"hi %s\", n)\n}\n\n"
                   "func main() {\n\tfmt.Println(hello(\"x\"))\n}\n",
    "web/app.ts": "export function add(a: number, b: number): number {\n  return a + b;\n}\n\n"
                  "export const twice = (n: number) => add(n, n);\n",
    "src/Main.java": "class Main {\n  static int one() { return 1; }\n  public static void main(String[] a) { one(); }\n}\n",
}


def test_every_file_is_parsed_once_for_chunks_and_call_graph():
    state = ParseState()
    before = parses_on_this_thread()
    docs = [Document(path=p, text=t, version="abc") for p, t in FILES.items()]
    chunks = [c for cs, _v in iter_documents(docs, Skips(), state) for c in cs]
    assert parses_on_this_thread() - before == len(FILES)
    # both readers got what they need from the one tree
    assert {c.path for c in chunks} == set(FILES)
    defs = {d.name for f in state.facts.values() if f for d in f.definitions}
    assert {"total", "dump", "hello", "main", "add", "one"} <= defs, defs
    calls = {c.callee_name for f in state.facts.values() if f for c in f.calls}
    assert {"total", "hello", "add", "one"} <= calls, calls


def test_another_text_is_parsed_again():
    from indexer.graph import extract_file

    before = parses_on_this_thread()
    a = extract_file("a.py", "def f():\n    g()\n")
    b = extract_file("a.py", "def f():\n    h()\n")
    assert parses_on_this_thread() - before == 2
    assert [c.callee_name for c in a.calls] == ["g"] and [c.callee_name for c in b.calls] == ["h"]


def test_only_the_syntax_module_makes_parsers_for_chunks_and_graph():
    """The count above sees only parses through indexer.syntax: no chunker or extractor
    may get a parser of its own (it would parse each file a second time, uncounted)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "indexer"
    own = [p.relative_to(root).as_posix() for folder in ("chunking", "graph") for p in (root / folder).rglob("*.py")
           if "get_parser" in p.read_text(encoding="utf-8")]
    assert own == [], own
