"""Static call graph: per-file facts, repository-wide resolution, caller queries.

Typical use::

    facts = [f for p, text in files if (f := extract_file(p, text)) is not None]
    graph = CallGraph(facts, resolve(facts))
    for d in graph.find_definitions("Session.request"):
        print(graph.callers(d, depth=2))
"""
from .facts import CallRef, CallSite, Definition, FileFacts, Import, Receiver, extract_file
from .query import BlindSpot, Caller, CallGraph, DefinitionRef, is_test_path
from .resolve import Edge, Resolver, resolve


def build_graph(files: dict[str, str]) -> CallGraph:
    """Extract, resolve and index ``{path: source}`` in one go (files of unsupported
    languages are ignored)."""
    facts = [f for p, text in files.items() if (f := extract_file(p, text)) is not None]
    return CallGraph(facts, resolve(facts))


__all__ = ["BlindSpot", "CallGraph", "CallRef", "CallSite", "Caller", "Definition", "DefinitionRef", "Edge",
           "FileFacts", "Import", "Receiver", "Resolver", "build_graph", "extract_file",
           "is_test_path", "resolve"]
