"""split_identifier / is_compound / identifier_parts: the keyword-search expansion of names."""
import pytest

from common.identifiers import identifier_parts, is_compound, split_identifier


@pytest.mark.parametrize("name, parts", [
    ("calculatePriceWithTax", ["calculate", "price", "with", "tax"]),      # camelCase
    ("SessionRedirectMixin", ["session", "redirect", "mixin"]),          # PascalCase
    ("HTTPServer", ["http", "server"]),                                   # leading acronym
    ("parseJSONResponse", ["parse", "json", "response"]),                # inner acronym
    ("HTTPServerError2x", ["http", "server", "error", "2x"]),            # digits + suffix
    ("IOError", ["io", "error"]),
    ("merge_environment_settings", ["merge", "environment", "settings"]),  # snake_case
    ("MAX_FILE_BYTES", ["max", "file", "bytes"]),                         # SCREAMING_SNAKE
    ("_private_name", ["private", "name"]),
    ("utf8Decode", ["utf", "8", "decode"]),
    ("__init__", ["init"]),                                               # dunder
    ("Session", ["session"]),
    ("HTTP", ["http"]),
    ("x", ["x"]),
])
def test_split_identifier(name, parts):
    assert split_identifier(name) == parts


@pytest.mark.parametrize("name", ["Session", "send", "HTTP", "__init__", "_", "x", "__main__"])
def test_single_words_are_not_compound(name):
    assert is_compound(name) is False


@pytest.mark.parametrize("name", ["getX", "merge_setting", "HTTPAdapter", "calculatePrice", "_a_b"])
def test_multi_part_names_are_compound(name):
    assert is_compound(name) is True


def test_identifier_parts_keeps_order_and_repeats_and_drops_single_words():
    text = "def calculatePriceWithTax(self, item):\n    return __init__ + Session + merge_setting + calculatePriceWithTax"
    assert identifier_parts(text) == (
        "calculate price with tax merge setting calculate price with tax")


def test_identifier_parts_of_plain_prose_is_empty():
    assert identifier_parts("the quick brown fox, 42 times") == ""


def test_identifier_parts_stops_after_max_tokens():
    text = " ".join(["fooBarBaz"] * 100)
    out = identifier_parts(text, max_tokens=10).split()
    # Stops at the first identifier that reaches the bound (never splits a name).
    assert out == ["foo", "bar", "baz"] * 4
