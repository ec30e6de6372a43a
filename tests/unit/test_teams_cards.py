"""Adaptive Card rendering and activity helpers of the Teams front end (no HTTP)."""
from __future__ import annotations

from microsoft_agents.activity import Activity

from bot.answer.service import Answer
from bot.chat.commands import parse
from bot.teams import cards
from bot.teams.app import db_key, feedback_vote, policy_channel, question_text, thread_root
from helpers.slack_harness import citation


def _answer(text="x", citations=None, prose="", notes=()):
    return Answer(question="q", text=text, citations=[citation()] if citations is None else citations, hits=[],
                  no_coverage=False, model="stub", prose=prose, notes=list(notes))


def test_answer_card_without_template_shows_the_plain_label_and_snippets_in_monospace():
    text = "Best match:\n    def calculate_price_with_tax(price, rate):\n        return price\nmore"
    card = cards.answer_card(_answer(text), templates={}, ref="r" * 32, conversation="c", message="m")
    assert card["version"] == "1.5" and card["$schema"].startswith("http://adaptivecards.io")
    code = [b for b in card["body"] if b["type"] == "Container"]
    assert code and code[0]["items"][0]["fontType"] == "Monospace"
    assert "def calculate_price_with_tax" in code[0]["items"][0]["text"]
    texts = [b["text"] for b in card["body"] if b["type"] == "TextBlock"]
    assert any(t.startswith("[1] src/tax.py:10-24@0123456") for t in texts)  # no link without a template
    assert card["actions"][0]["data"] == {"action": "feedback", "vote": 1, "ref": "r" * 32,
                                          "conversation": "c", "message": "m"}


def test_model_answer_shows_prose_and_notes_and_long_text_is_cut():
    card = cards.answer_card(_answer(text="full", prose="P" * 20000, notes=["stale index"]),
                             templates={}, ref="r", conversation="c", message="m")
    first = card["body"][0]["text"]
    assert len(first) <= cards.TEXT_LIMIT and first.endswith("…")
    assert any(b.get("color") == "Warning" and "stale index" in b["text"] for b in card["body"])


def test_md_link_is_safe():
    assert cards.md_link("https://x/a (b).py", "a[1].py") == "[a(1).py](https://x/a%20%28b%29.py)"
    assert cards.md_link(None, "plain") == "plain"


def test_helpers():
    act = Activity.model_validate({
        "type": "message", "id": "42", "text": "<at>coderag</at>&nbsp;impact <b>Cart.total</b>",
        "recipient": {"id": "28:bot", "name": "coderag"},
        "entities": [{"type": "mention", "text": "<at>coderag</at>", "mentioned": {"id": "28:bot", "name": "coderag"}}],
        "conversation": {"id": "19:abc@thread.tacv2;messageid=7"}, "channelData": {"channel": {"id": "19:abc@thread.tacv2"}}})
    assert question_text(act) == "impact Cart.total"
    assert parse(question_text(act), "@coderag").name == "impact"
    assert thread_root(act) == "7" and policy_channel(act) == "19:abc@thread.tacv2"
    assert db_key("short") == "short" and len(db_key("x" * 100)) == 40 and db_key("x" * 100) == db_key("x" * 100)
    assert feedback_vote({"action": "feedback", "vote": "down"}) == -1
    assert feedback_vote({"action": "feedback", "vote": 3}) is None and feedback_vote("x") is None
