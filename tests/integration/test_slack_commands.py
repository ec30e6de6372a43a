"""/coderag slash command and the feedback buttons, over real HTTP against the fake Slack."""
from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from bot.querylog.models import Feedback, Query
from helpers.slack_harness import COMMIT, Harness, StubService, WithImpact
from common.errors import CoderagError
from common.settings import load


@pytest.fixture(autouse=True)
def database(tmp_path, monkeypatch):
    monkeypatch.setenv("CODERAG_DATABASE_URL", f"sqlite:///{tmp_path / 'slack.db'}")


from bot.querylog.privacy import UserHasher  # noqa: E402


def all_text(blocks) -> str:
    out = []
    for b in blocks or []:
        if b["type"] == "section":
            out.append(b["text"]["text"])
        elif b["type"] == "context":
            out.extend(e["text"] for e in b["elements"])
    return "\n".join(out)


REPORT = {
    "repo": "shop", "commit": COMMIT,
    "definitions": [{"path": "src/tax.py", "start_line": 5, "end_line": 8}],
    "callers": [
        {"path": "src/cart.py", "symbol": "Cart.total", "line": 30, "depth": 1, "is_test": False, "resolved": True},
        {"path": "src/cart.py", "symbol": "Cart.preview", "line": 12, "depth": 2, "is_test": False, "resolved": True},
        {"path": "src/api.py", "symbol": "quote", "line": 7, "depth": 1, "is_test": False, "resolved": False},
        {"path": "tests/test_tax.py", "symbol": "test_tax", "line": 4, "depth": 1, "is_test": True, "resolved": True},
    ],
}


def test_ask_acks_fast_and_responds_through_response_url():
    service = StubService(delay=3.5)
    with Harness(service) as h:
        resp, latency = h.command("ask where is tax computed?", name="ask1")
        assert resp.status_code == 200 and latency < 1.0
        assert "Looking into it" in resp.json()["text"]
        assert h.fake.responses() == []
        r = h.fake.wait_for(lambda: h.fake.responses("ask1"), timeout=15)[0]
        assert r.body["response_type"] == "ephemeral"
        text = all_text(r.body["blocks"])
        assert "Answer to: where is tax computed?" in text
        assert f"<https://github.com/acme/shop/blob/{COMMIT}/src/tax.py#L10-L24|src/tax.py:L10-L24>" in text
        assert service.asked[0][0] == "where is tax computed?"


def test_bare_text_is_a_question():
    service = StubService()
    with Harness(service) as h:
        h.command("where is tax computed?", name="q")
        h.fake.wait_for(lambda: h.fake.responses("q"))
        assert service.asked[0][0] == "where is tax computed?"


def test_ask_failure_responds_with_an_apology():
    with Harness(StubService(fail=ConnectionError("weaviate down"))) as h:
        h.command("ask where?", name="f")
        r = h.fake.wait_for(lambda: h.fake.responses("f"))[0]
        assert "Sorry" in r.body["text"]


def test_impact_groups_callers_by_file_and_lists_tests_apart():
    with Harness(WithImpact(REPORT)) as h:
        resp, latency = h.command("impact calculatePriceWithTax", name="imp")
        assert resp.status_code == 200 and latency < 1.0
        r = h.fake.wait_for(lambda: h.fake.responses("imp"))[0]
        text = all_text(r.body["blocks"])
        assert "`calculatePriceWithTax`" in text
        base = f"https://github.com/acme/shop/blob/{COMMIT}"
        assert f"<{base}/src/tax.py#L5-L8|src/tax.py:L5-L8>" in text
        # grouped by file: api.py before cart.py (sorted), cart.py holds both its callers
        api, cart = text.index("*src/api.py* (1)"), text.index("*src/cart.py* (2)")
        assert api < cart < text.index("`Cart.preview`") < text.index("`Cart.total`")
        assert f"<{base}/src/cart.py#L30-L30|src/cart.py:L30>" in text
        assert "unresolved" in text and "depth 2" in text
        tests_at = text.index("*Tests affected*")
        assert text.index("tests/test_tax.py") > tests_at
        assert "tests/test_tax.py" not in text[:tests_at]
        assert "3 call site(s) in 2 file(s)" in text


@pytest.mark.parametrize("error, says, hidden", [
    # a product error is shown as the service wrote it
    (CoderagError("no symbol named 'nope' in the index"), "no symbol named 'nope'", None),
    # an unexpected one is the apology, without the error's text
    (RuntimeError("db at 10.0.0.7 down"), "something went wrong", "10.0.0.7"),
])
def test_impact_failure_shows_a_product_error_and_hides_an_unexpected_one(error, says, hidden):
    with Harness(WithImpact(error=error)) as h:
        h.command("impact Cart.total", name="imp")
        text = h.fake.wait_for(lambda: h.fake.responses("imp"))[0].body["text"]
        assert says in text.lower()
        assert hidden is None or hidden not in text


def test_status_lists_sources_with_staleness():
    now = datetime.now(timezone.utc)
    sources = [{"name": "shop", "commit": COMMIT, "indexed_at": now - timedelta(hours=2), "chunks": 14},
               {"name": "legacy", "commit": "fedcba9876543210", "indexed_at": (now - timedelta(days=3)).isoformat(),
                "chunks": 3}]
    with Harness(StubService(sources=sources)) as h:
        resp, _ = h.command("status", name="st")
        assert resp.status_code == 200
        r = h.fake.wait_for(lambda: h.fake.responses("st"))[0]
        text = all_text(r.body["blocks"])
        shop, legacy = [ln for ln in text.splitlines() if ln.startswith("•")]
        assert "*shop*" in shop and "`0123456`" in shop and "2 h ago" in shop and "stale" not in shop
        assert "*legacy*" in legacy and "3 days ago" in legacy and "stale" in legacy


@pytest.mark.parametrize("text", ["", "help", "ask", "impact", "impact two words"])
def test_help_and_usage_errors_answer_in_the_ack(text):
    with Harness(StubService()) as h:
        resp, _ = h.command(text)
        assert resp.status_code == 200
        body = resp.json()
        assert "/coderag ask" in all_text(body["blocks"])
        time.sleep(0.2)
        assert h.fake.responses() == []


def test_feedback_clicks_are_recorded_and_acknowledged():
    service = StubService()
    with Harness(service) as h:
        ts, _ = h.mention("where is tax computed?")
        post = h.fake.wait_for(lambda: [p for p in h.fake.posts() if p.body.get("blocks")])[0]
        buttons = [b for b in post.body["blocks"] if b["type"] == "actions"][0]["elements"]
        up, down = buttons
        resp, latency = h.click(up["action_id"], up["value"], message_ts="1800000000.000009", name="v1")
        assert resp.status_code == 200 and latency < 1.0
        with h.sessions() as s:
            (row,) = s.scalars(select(Feedback)).all()
            uid = UserHasher.from_settings(load().querylog, h.sessions)  # user ids are stored hashed (the default)
            assert (row.channel, row.message_ts, row.user, row.vote, row.comment) == \
                ("C0000001", ts, uid("U0000009"), 1, None)
            (query,) = s.scalars(select(Query)).all()  # the posted answer was logged first
            assert row.query_id == query.id
            assert (query.source, query.channel, query.message_ts, query.thread_ts, query.question,
                    query.model, query.no_coverage) == ("slack", "C0000001", ts, ts, "where is tax computed?",
                                                        "stub", False)
            assert query.answer.startswith("Answer to: where is tax computed?")
        thanks = h.fake.wait_for(lambda: h.fake.responses("v1"))[0]
        assert "Thanks" in thanks.body["text"] and thanks.body["replace_original"] is False
        # changing one's mind updates the vote; another user adds a row
        h.click(down["action_id"], down["value"], name="v2")
        h.click(down["action_id"], down["value"], user="U0000010", name="v3")
        h.fake.wait_for(lambda: len(h.fake.of("views.open")) == 2)  # a 👎 asks why (see the next test)
        with h.sessions() as s:
            votes = {(r.user, r.vote) for r in s.scalars(select(Feedback).where(Feedback.message_ts == ts))}
        assert votes == {(uid("U0000009"), -1), (uid("U0000010"), -1)}


def test_feedback_on_slash_command_answer_uses_the_answer_message_ts():
    with Harness(StubService()) as h:
        h.command("ask where?", name="a")
        r = h.fake.wait_for(lambda: h.fake.responses("a"))[0]
        up = [b for b in r.body["blocks"] if b["type"] == "actions"][0]["elements"][0]
        value = json.loads(up["value"])
        assert value == {"channel": "C0000001", "ts": "", "q": value["q"]} and len(value["q"]) == 32
        h.click(up["action_id"], up["value"], message_ts="1800000000.000777", name="v")
        deadline = time.monotonic() + 10  # the answer is logged after it is posted: wait for it
        while True:
            with h.sessions() as s:
                rows, queries = s.scalars(select(Feedback)).all(), s.scalars(select(Query)).all()
            if (rows and queries and rows[0].query_id is not None) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        (row,), (query,) = rows, queries
        assert (row.channel, row.message_ts, row.vote) == ("C0000001", "1800000000.000777", 1)
        # the slash-command answer was logged and the vote points at it (through the button's ref)
        assert (query.ref, query.source, query.channel, query.user, query.question) == \
            (value["q"], "slack", "C0000001", UserHasher.from_settings(load().querylog, h.sessions)("U0000001"), "where?")
        assert row.query_id == query.id and query.post_ms is not None and query.post_ms >= 0


def test_a_thumbs_down_asks_why_and_the_reason_is_stored_and_exported():
    from urllib.parse import urlencode

    from bot.querylog.export import negative_questions

    with Harness(StubService()) as h:
        ts, _ = h.mention("where is tax computed?")
        post = h.fake.wait_for(lambda: [p for p in h.fake.posts() if p.body.get("blocks")])[0]
        down = [b for b in post.body["blocks"] if b["type"] == "actions"][0]["elements"][1]
        h.click(down["action_id"], down["value"], name="d")
        (opened,) = h.fake.wait_for(lambda: h.fake.of("views.open"))
        view = opened.body["view"]
        view = json.loads(view) if isinstance(view, str) else view
        assert opened.body["trigger_id"] == "1.2.3" and view["callback_id"] == "coderag_feedback_reason"
        options = [o["value"] for o in view["blocks"][0]["element"]["options"]]
        assert options == ["incorrect", "incomplete", "wrong_place", "other"]
        submitted = dict(view, id="V1", state={"values": {
            "reason": {"choice": {"type": "radio_buttons", "selected_option": {"value": "wrong_place"}}},
            "details": {"text": {"type": "plain_text_input", "value": "The rounding is in cart.py, not tax.py"}}}})
        payload = {"type": "view_submission", "team": {"id": "T0000001"}, "api_app_id": "A0001", "token": "legacy",
                   "user": {"id": "U0000009", "team_id": "T0000001"}, "trigger_id": "4.5.6", "view": submitted}
        resp, _ = h.post_raw(urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")
        assert resp.status_code == 200
        deadline = time.monotonic() + 10
        while True:
            with h.sessions() as s:
                row = s.scalars(select(Feedback).where(Feedback.message_ts == ts)).first()
            if (row is not None and row.comment) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert (row.vote, row.comment) == (-1, "wrong_place: The rounding is in cart.py, not tax.py")
        (item,) = list(negative_questions(h.sessions))
        assert item["feedback"] == ["wrong_place: The rounding is in cart.py, not tax.py"]
