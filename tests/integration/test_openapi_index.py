"""An OpenAPI spec indexed into real Weaviate: every operation is found by method and path
and by its description, and what is found carries the spec version."""
from __future__ import annotations

import pytest

from helpers.gitrepo import make_git_repo
from helpers.openapi_spec import MALFORMED_YAML, OPERATIONS, SPEC_YAML


@pytest.fixture
def api_repo(tmp_path, store, local_embedder, settings_env):
    from common.settings import Settings
    from indexer import index_repository

    repo = make_git_repo(tmp_path, {"api/openapi.yaml": SPEC_YAML, "broken/openapi.yaml": MALFORMED_YAML,
                                    "shop/orders.py": "def cancel(order):\n    order.cancelled = True\n"},
                         name="shop")
    index_repository(repo, name="shop", settings=Settings.from_env(), store=store, embedder=local_embedder)
    from bot.retrieval.retriever import Retriever

    return Retriever(store, local_embedder)


def test_each_operation_is_found_by_method_path_and_by_description(api_repo):
    for symbol, description in OPERATIONS:
        for query in (symbol, description):
            hits = api_repo.search(query, top_k=3).hits
            ops = [h.chunk for h in hits if h.chunk.path == "api/openapi.yaml"]
            assert ops and ops[0].symbol == symbol, (query, [(h.chunk.path, h.chunk.symbol) for h in hits])
            assert ops[0].kind == "api_operation"
            assert ops[0].content.startswith(f"OpenAPI operation {symbol} (openapi.yaml, spec 3.2.1)")


def test_a_malformed_spec_is_indexed_as_windows(api_repo):
    hits = api_repo.search("Broken API list orders unclosed", top_k=10).hits
    broken = [h.chunk for h in hits if h.chunk.path == "broken/openapi.yaml"]
    assert broken and broken[0].kind == "file"


def test_an_answer_cites_the_operation_with_its_spec_version(api_repo, store, local_embedder):
    from bot.answer.service import AnswerService
    from common.settings import load

    service = AnswerService(store, local_embedder, settings=load())
    answer = service.ask("what does GET /orders/{id} return?")
    cited = [c for c in answer.citations if c.path == "api/openapi.yaml"]
    assert cited and cited[0].symbol == "GET /orders/{id} (openapi.yaml, spec 3.2.1)"
    assert "GET /orders/{id} (openapi.yaml, spec 3.2.1)" in answer.text


def test_an_operation_id_question_is_answered_and_bad_specs_are_parse_warnings(tmp_path, store, local_embedder,
                                                                                settings_env):
    from bot.answer.service import AnswerService
    from common.settings import Settings, load
    from helpers.openapi_spec import PATHS_LIST_YAML, PETS_SERVER, PETS_YAML
    from indexer import index_repository

    repo = make_git_repo(tmp_path, {"api/openapi.yaml": PETS_YAML, "odd/openapi.yaml": PATHS_LIST_YAML,
                                    "broken/openapi.yaml": MALFORMED_YAML,
                                    "pets/server.py": PETS_SERVER}, name="pets")
    result = index_repository(repo, name="pets", settings=Settings.from_env(), store=store, embedder=local_embedder)
    assert result.parse_warnings == 2  # the spec that does not parse and the one built wrong

    service = AnswerService(store, local_embedder, settings=load())
    answer = service.ask("What does the showPetById operation do?", repos=["pets"])
    assert not answer.no_coverage, answer.text
    assert answer.text.startswith("`GET /pets/{petId}` (operation showPetById, api/openapi.yaml:"), answer.text
    assert ", spec 1.0.0): Info for a specific pet. Returns a pet by its id." in answer.text.split("\n")[0]
    assert "api_operation" not in answer.text
    assert answer.citations[0].symbol == "GET /pets/{petId} (openapi.yaml, spec 1.0.0)"


def test_search_names_an_operation_with_its_spec_version(api_repo, settings_env):
    from helpers.cli import run_cli

    proc = run_cli(settings_env, "search", "GET /orders/{id}", "--repo", "shop", "--top-k", "3")
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith(" 1. shop/api/openapi.yaml:") and "GET /orders/{id} (openapi.yaml, spec 3.2.1)" in first, \
        proc.stdout
