"""The keyless answer's lead: one or two sentences from the code, in several languages,
and the setting with its default for a configuration question."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from bot.answer.extractive import extractive_answer
from bot.answer.lead import asks_for_setting, doc_of, first_sentence, lead


@dataclass
class Chunk:
    repo: str
    path: str
    symbol: str
    kind: str
    content: str
    start_line: int = 10
    end_line: int = 30
    commit: str = "abcdef1234567890"
    indexed_at: datetime = datetime(2026, 1, 1, tzinfo=timezone.utc)
    language: str = ""


@dataclass
class Hit:
    chunk: Chunk


@dataclass
class Result:
    question: str
    hits: list


PY = Chunk("shop", "shop/cart.py", "Cart.total", "method", (
    "class Cart:\n    def total(self, rate):\n"
    '        """Sum of the line prices plus sales tax, rounded to cents. Used by checkout."""\n'
    "        return round(sum(self.prices) * (1 + rate), 2)\n"))
GO = Chunk("api", "server/health.go", "HealthHandler", "function", (
    "// HealthHandler answers the load balancer's health probe.\n// It never touches the database.\n"
    "func HealthHandler(w http.ResponseWriter, r *http.Request) {\n\tw.WriteHeader(200)\n}\n"))
TS = Chunk("web", "src/retry.ts", "retryWithBackoff", "function", (
    "/**\n * Retries a failed request with exponential backoff.\n * @param attempts how many tries\n */\n"
    "export function retryWithBackoff(attempts: number) {\n  return attempts * 2;\n}\n"))
JAVA = Chunk("svc", "src/main/java/Pay.java", "Pay.refund", "method", (
    "public class Pay {\n    /** Refunds a captured payment to the original card. */\n"
    "    public void refund(String id) {\n    }\n}\n"))
CONFIG = Chunk("web", "web/settings.py", "", "module", (
    'DEFAULTS = {\n    "SESSION_TIMEOUT_MINUTES": 30,\n    "MAX_UPLOAD_MB": 16,\n}\n'
    'TIMEOUT = int(os.environ.get("REQUEST_TIMEOUT_SECONDS", 10))\n'))
USES = Chunk("web", "web/session.py", "expire_session", "function", (
    "def expire_session(app, session):\n"
    '    """End a session after SESSION_TIMEOUT_MINUTES of inactivity."""\n'
    '    return session.age > app.config["SESSION_TIMEOUT_MINUTES"]\n'))


def test_docstrings_and_comments_of_several_languages():
    assert first_sentence(doc_of(PY.content, "total")) == "Sum of the line prices plus sales tax, rounded to cents."
    assert first_sentence(doc_of(GO.content)) == "HealthHandler answers the load balancer's health probe."
    assert first_sentence(doc_of(TS.content)) == "Retries a failed request with exponential backoff."
    assert first_sentence(doc_of(JAVA.content)) == "Refunds a captured payment to the original card."
    assert first_sentence("Used by :func:`send_file` with ``max_age`` set. More.") == \
        "Used by `send_file` with `max_age` set."


def test_lead_names_the_definition_and_what_it_does():
    text = lead("How is the cart total computed?", [Hit(PY), Hit(GO)])
    assert text == ("`Cart.total` (method, shop/cart.py:10): Sum of the line prices plus sales tax, "
                    "rounded to cents.")
    assert lead("what answers the health probe?", [Hit(GO)]).startswith("`HealthHandler` (function, server/health.go:10)")


def test_a_setting_question_names_the_key_and_its_default():
    assert asks_for_setting("How long until an idle session expires by default?")
    assert not asks_for_setting("Who calls the refund function?")
    text = lead("How long is the session timeout?", [Hit(USES), Hit(PY)], lookup=lambda key: [CONFIG.content])
    assert text.startswith("The setting is `SESSION_TIMEOUT_MINUTES` (default `30`).")
    env = lead("What is the request timeout setting in seconds?", [Hit(CONFIG)])
    assert env.startswith("The setting is `REQUEST_TIMEOUT_SECONDS` (default `10`).")


def test_extractive_answer_is_the_lead_and_top_k_citations():
    hits = [Hit(PY), Hit(GO), Hit(TS), Hit(JAVA)]
    text, cites = extractive_answer(Result("How is the cart total computed?", hits), max_cited=2)
    assert text.startswith("`Cart.total` (method, shop/cart.py:10): Sum of the line prices")
    assert "\n" not in text and "round(sum(" not in text  # sentences, not code
    assert [c.ref for c in cites] == ["shop/shop/cart.py:10-30@abcdef1", "api/server/health.go:10-30@abcdef1"]


SECTION = Chunk("shop", "docs/testing.md", "Testing > Basic example", "section", (
    "## Basic example\n\nThe `CartRunner` invokes a command and captures its output:\n\n"
    "```python\nrunner = CartRunner()\nresult = runner.invoke(checkout)\n```\n"))
RUNNER = Chunk("shop", "shop/testing.py", "CartRunner", "class", (
    "class CartRunner:\n    \"\"\"Runs a command in isolation and captures what it prints.\"\"\"\n"), start_line=40)


def test_a_prose_top_hit_leads_with_the_code_it_describes():
    asked = []

    def defines(repo, names):
        asked.append((repo, list(names)))
        return [RUNNER]

    text = lead("how do the tests run a command?", [Hit(SECTION)], defines=defines)
    first = text.split(". ")[0]
    assert first.startswith("`CartRunner` (class, shop/testing.py:40): Runs a command in isolation")
    assert "“Testing > Basic example” of docs/testing.md describes it" in text
    assert asked == [("shop", ["CartRunner"])]
    # the definition among the other hits is used without a look-up
    asked.clear()
    assert lead("how?", [Hit(SECTION), Hit(RUNNER)], defines=defines).startswith("`CartRunner`")
    assert asked == []
    # nothing defines the names: the section itself is the lead, as before
    plain = lead("how?", [Hit(SECTION)], defines=lambda repo, names: [])
    assert plain == "The closest match is the section “Testing > Basic example” of docs/testing.md."


def test_a_contracted_key_matches_the_words_it_contracts():
    from bot.answer.lead import abbreviates

    q = "which setting makes options read their values from environment variables automatically".split()
    assert abbreviates("envvar", q) and abbreviates("envvars", q)
    assert abbreviates("maxlen", "the maximum length of a line".split())
    assert not abbreviates("options", q)  # a whole word is not a contraction
    assert not abbreviates("envelope", q)
    hit = Hit(Chunk("cli", "cli/core.py", "Context", "class",
                    "class Context:\n    def __init__(self, auto_envvar_prefix=None, color=None):\n        pass\n"))
    assert lead(" ".join(q) + "?", [hit]).startswith("The setting is `auto_envvar_prefix` (default `None`).")


def test_rust_docs_above_attributes_and_longer_than_the_window():
    assert doc_of("/// Parse a header.\n#[inline]\n#[must_use]\npub fn parse() {}\n") == "Parse a header."
    # the first window of an item whose doc comment outruns it: the doc is the window
    window = "/// Counting semaphore.\n///\n/// Permits are used to synchronize access.\n" + "/// more\n" * 97
    assert first_sentence(doc_of(window)) == "Counting semaphore."
    # a comment after code is not the chunk's doc
    assert doc_of("x = 1\n# a trailing remark\n") == ""


ERRORS = Chunk("cli", "cli/exceptions.py", "MissingParameter", "class", (
    "class MissingParameter(BadParameter):\n"
    '    """Raised if a required option or argument was not given."""\n'), start_line=159)
OPTION_INIT = Chunk("cli", "cli/core.py", "Option.__init__", "method", (
    "    def __init__(self, required=False):\n        if required and value is None:\n"
    "            raise MissingParameter(ctx=ctx, param=self)\n"), start_line=2951)
GO_ERR = Chunk("api", "server/errors.go", "ErrNotFound", "struct", "type NotFound struct{ Key string }\n")


def test_an_error_question_leads_with_the_error_type_among_the_top_hits():
    from bot.answer.lead import asks_for_error, is_error_type

    assert asks_for_error("What error does the user see when a required option is missing?")
    assert asks_for_error("Which exception is raised for a bad URL?")
    assert not asks_for_error("How are errors logged?")
    assert is_error_type(ERRORS)  # defined in an exceptions file
    assert is_error_type(GO_ERR)  # errors.go
    assert is_error_type(Chunk("w", "w/pay.py", "Declined", "class", "class Declined(PaymentError):\n    pass\n"))
    assert not is_error_type(OPTION_INIT) and not is_error_type(PY)
    q = "What error does the user see when a required option is missing?"
    assert lead(q, [Hit(OPTION_INIT), Hit(ERRORS)]).startswith("`MissingParameter` (class, cli/exceptions.py:159): Raised")
    # not an error question: the best hit leads, as always
    assert lead("How is a required option checked?", [Hit(OPTION_INIT), Hit(ERRORS)]).startswith(
        "The closest match is `Option.__init__`")


def test_a_setting_named_in_a_prose_section_and_words_that_only_say_setting():
    section = Chunk("cli", "docs/options.md", "Options > Values from Environment Variables", "section", (
        "## Values from Environment Variables\n\nPass `auto_envvar_prefix` to the context and every option "
        "reads `PREFIX_NAME`.\n\n```python\ncli(auto_envvar_prefix=\"GREETER\")\n```\n"))
    q = "Which setting makes options read their values from environment variables automatically?"
    text = lead(q, [Hit(section)])
    # the key from the prose, and no default: the example's value is not one
    assert text.startswith("The setting is `auto_envvar_prefix`.")
    # "setting" in the question does not make `context_settings` the answer
    cmd = Chunk("cli", "cli/core.py", "Command", "class_signature", (
        "class Command:\n    def __init__(self, name, context_settings=None, short_help=None,\n"
        "                 add_help_option=True):\n"))
    assert lead("Which setting controls how many characters of a command's help are shown?",
                [Hit(cmd)]).startswith("The setting is `short_help` (default `None`).")
    assert not lead("Which setting controls the cart total?", [Hit(cmd)]).startswith("The setting is")


def test_a_default_is_where_the_code_declares_it_not_an_example_or_a_shell_line():
    from bot.answer.lead import _default_of

    assert _default_of("GIN_MODE", ['warn(" - using env:\\texport GIN_MODE=release")']) is None
    assert _default_of("prefix", ["x(prefix=self.prefix)", "def f(prefix: str = 'app'):"]) == "'app'"
    example = Chunk("cli", "examples/complex/cli.py", "", "module", 'SETTINGS = dict(auto_envvar_prefix="COMPLEX")\n')
    code = Chunk("cli", "cli/core.py", "Context.__init__", "method",
                 "    def __init__(self, auto_envvar_prefix: str | None = None):\n")
    q = "Which setting sets the environment variable prefix?"
    assert lead(q, [Hit(example)]).startswith("The setting is `auto_envvar_prefix`. ")  # an example's value: no default
    assert lead(q, [Hit(example), Hit(code)]).startswith("The setting is `auto_envvar_prefix` (default `None`).")


def test_a_class_without_a_docstring_does_not_borrow_a_methods_and_a_file_has_its_own():
    config = Chunk("cli", "cli/config.py", "Config", "class", (
        "class Config(BaseConfigDict):\n    FILENAME = 'config.json'\n\n    @property\n"
        "    def developer_mode(self) -> bool:\n        \"\"\"This is a special setting for the development "
        "environment.\"\"\"\n        return True\n"), start_line=137)
    assert doc_of(config.content, "Config") == ""
    assert lead("what holds the configuration?", [Hit(config)]) == \
        "The closest match is `Config` (class, cli/config.py:137)."
    header = Chunk("cli", "cli/sessions.py", "sessions", "file_header", (
        '"""\nPersistent, JSON-serialized sessions.\n\n"""\nimport json\nfrom pathlib import Path\n'), start_line=1)
    assert lead("how are sessions saved?", [Hit(header)]) == \
        "`sessions` (file, cli/sessions.py:1): Persistent, JSON-serialized sessions."


def test_a_key_mostly_about_something_else_is_not_the_setting():
    bundle = Chunk("cli", "cli/client.py", "", "module", "REQUESTS_CA_BUNDLE = os.environ.get('REQUESTS_CA_BUNDLE')\n")
    assert not lead("What is the default timeout for requests?", [Hit(bundle)]).startswith("The setting is")


def test_a_command_line_option_is_a_setting_with_its_default():
    cli = Chunk("cli", "cli/definition.py", "", "module", (
        "network.add_argument(\n    '--timeout',\n    type=float,\n    default=0,\n    metavar='SECONDS',\n"
        "    short_help='The connection timeout of the request in seconds.',\n)\n"))
    assert lead("What is the default timeout for requests?", [Hit(cli)]).startswith(
        "The setting is `--timeout` (default `0`).")


def test_rst_titles_are_not_sentences_and_two_letter_words_match_keys():
    assert first_sentence("requests.certs\n~~~~~~~~~~~~~~\n\nThis module returns the preferred CA bundle.") == \
        "This module returns the preferred CA bundle."
    env = Chunk("http", "http/utils.py", "", "module", "REQUESTS_CA_BUNDLE = os.environ.get('REQUESTS_CA_BUNDLE')\n")
    assert lead("Which environment variables point the client at a custom CA bundle?", [Hit(env)]).startswith(
        "The setting is `REQUESTS_CA_BUNDLE`")


def test_an_openapi_operation_leads_with_what_it_does_not_the_index_kind():
    from helpers.openapi_spec import SPEC_YAML
    from indexer.chunking import chunk_file
    from indexer.documents import chunk_content

    text = SPEC_YAML.replace("    get:\n      summary: Get an order\n",
                             "    get:\n      summary: Get an order\n      operationId: getOrder\n")
    ops = {c.symbol: c for c in chunk_file("api/openapi.yaml", text)}

    def stored(c):
        return Chunk("shop", c.path, c.symbol, c.kind, chunk_content(c), c.start_line, c.end_line)

    got = lead("what does getOrder do?", [Hit(stored(ops["GET /orders/{id}"]))])
    line = ops["GET /orders/{id}"].start_line
    assert got == (f"`GET /orders/{{id}}` (operation getOrder, api/openapi.yaml:{line}, spec 3.2.1): "
                   "Get an order. Returns one order with its line items and totals.")
    health = lead("is there a health probe?", [Hit(stored(ops["GET /health"]))])
    assert health.startswith("`GET /health` (operation, api/openapi.yaml:")
    assert health.endswith(", spec 3.2.1): Health probe. Answers the load balancer's liveness check.")
    for said in (got, health):
        assert "api_operation" not in said and "closest match" not in said
