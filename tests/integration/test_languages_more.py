"""The fourteen table-driven languages: chunks by symbol, name-level call facts, and an
index that finds a function by its name and by a description of what it does.

Each sample (``helpers/polyglot.py``) is written in the language's own style: a
documented function, a caller, and two unrelated functions a search must not prefer.
"""
import pytest

from helpers.gitrepo import make_git_repo
from helpers.polyglot import SAMPLES
from common.settings import Settings
from indexer import index_repository
from indexer.chunking import chunk_file, detect_language
from indexer.chunking.generic import GENERIC_LANGUAGES, definitions, walk
from indexer.graph.facts import extract_file

LANGS = sorted(SAMPLES)


def _target_def(lang):
    path, source, target, _ = SAMPLES[lang]
    defs, _, _ = definitions(lang, source)
    found = [d for d in walk(defs) if d.symbol == target]
    assert found, (lang, [d.symbol for d in walk(defs)])
    return found[0]


def test_every_table_language_has_a_sample_and_an_extension():
    assert set(SAMPLES) == set(GENERIC_LANGUAGES)
    for lang, (path, *_rest) in SAMPLES.items():
        assert detect_language(path) == lang


@pytest.mark.parametrize("lang", LANGS)
def test_definition_symbol_and_doc(lang):
    d = _target_def(lang)
    assert d.kind in ("function", "method")
    assert d.doc.startswith("Parse the Retry-After header"), d.doc


@pytest.mark.parametrize("lang", LANGS)
def test_the_target_sits_in_a_definition_chunk_not_a_window(lang):
    path, source, target, _ = SAMPLES[lang]
    d = _target_def(lang)
    line = d.node.start_point.row + 1
    chunks = chunk_file(path, source)
    holding = [c for c in chunks if c.start_line <= line <= c.end_line]
    assert holding, [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks]
    assert all(c.kind in ("function", "method", "class") for c in holding), \
        [(c.kind, c.symbol) for c in holding]
    assert all(c.language == lang for c in chunks)
    # nothing is lost: every non-blank line is in some chunk
    covered = {n for c in chunks for s, e in c.extra.get("ranges", [[c.start_line, c.end_line]])
               for n in range(s, e + 1)}
    lines = source.split("\n")
    assert [i for i, text in enumerate(lines, 1) if text.strip() and i not in covered] == []


@pytest.mark.parametrize("lang", LANGS)
def test_the_caller_calls_the_target_by_name(lang):
    path, source, target, caller = SAMPLES[lang]
    facts = extract_file(path, source)
    assert facts is not None and facts.language == lang
    name = target.rsplit(".", 1)[-1]
    calls = {(c.caller_symbol, c.callee_name) for c in facts.calls}
    assert (caller, name) in calls, sorted(calls)
    # the definitions the graph knows are the chunker's
    assert target in {d.symbol for d in facts.definitions}


def test_unknown_extension_keeps_the_window_fallback():
    chunks = chunk_file("notes/data.xyz", "a\nb\n")
    assert [c.kind for c in chunks] == ["file"]


@pytest.mark.weaviate
@pytest.mark.parametrize("lang", LANGS)
def test_index_finds_the_function_by_name_and_by_description(lang, tmp_path, settings_env, store,
                                                              local_embedder):
    from bot.retrieval.retriever import Retriever

    path, source, target, _ = SAMPLES[lang]
    repo = make_git_repo(tmp_path, {path: source}, name=f"poly-{lang}")
    index_repository(repo, settings=Settings.from_env(), store=store, embedder=local_embedder)
    line = _target_def(lang).node.start_point.row + 1
    retriever = Retriever(store, local_embedder)

    def top_holds_target(query):
        hit = retriever.search(query, top_k=3).hits[0].chunk
        return hit.path == path and hit.start_line <= line <= hit.end_line, (hit.symbol, hit.start_line)

    name = target.rsplit(".", 1)[-1]
    ok, got = top_holds_target(name)
    assert ok, f"by name {name!r}: {got}"
    ok, got = top_holds_target("read the Retry-After response header as a number of seconds")
    assert ok, f"by description: {got}"


def test_ruby_class_methods_in_class_self_belong_to_the_class():
    src = "class Base\n  class << self\n    alias stop! quit!\n    def on_start(&block)\n      @hook = block\n    end\n  end\nend\n"
    defs, _, _ = definitions("ruby", src)
    assert [d.symbol for d in walk(defs)] == ["Base", "Base.on_start"]
