"""Fixes from the attack on the running bot (hardening), chat side: markup in every text
field made inert (Slack and Teams), the ``/slack/events`` body cap and log hygiene,
malformed requests, the question-length cap, slash-command replay, lone surrogates.

Real HTTP (uvicorn) against the fake Slack Web API; stub answer services (no Weaviate)."""
from __future__ import annotations

import json
import logging
import time
from urllib.parse import urlencode

import pytest

from helpers.slack_harness import Harness, StubService, citation

# What an indexed file or the model could smuggle into an answer.
HOSTILE = "Ping <!channel> and <!here>, cc <@U0BADBAD1>, see <https://evil.example/x|the docs>"


@pytest.fixture(autouse=True)
def database(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'slack.db'}"
    monkeypatch.setenv("CODERAG_DATABASE_URL", url)
    return url


def _live_markup(text: str) -> list[str]:
    """Slack control sequences that would be live in ``text`` (mrkdwn)."""
    return [s for s in ("<!channel>", "<!here>", "<@U0BADBAD1>", "<https://evil.example") if s in (text or "")]


def _all_texts(call_body: dict) -> list[str]:
    """Every text field Slack would render in a posted message: ``text`` and block texts."""
    out = [call_body.get("text") or ""]
    for b in call_body.get("blocks") or []:
        if isinstance(b.get("text"), dict):
            out.append(b["text"].get("text", ""))
        for e in b.get("elements") or []:
            if isinstance(e, dict) and isinstance(e.get("text"), str):
                out.append(e["text"])
    return out


# --------------------------------------------------------------------------- 3: escaping

def test_slack_text_field_of_posts_and_responses_is_escaped():
    service = StubService(text=HOSTILE, citations=[citation(symbol="<!channel>")])
    with Harness(service) as h:
        h.mention("where is tax computed?")
        post = h.fake.wait_for(lambda: [c for c in h.fake.posts() if c.body.get("blocks")])[0]
        for t in _all_texts(post.body):
            assert _live_markup(t) == [], t
        assert "&lt;!channel&gt;" in post.body["text"]  # shown literally, not dropped
        h.command("ask where is tax computed?", name="ask1")
        resp = h.fake.wait_for(lambda: [c for c in h.fake.responses("ask1") if c.body.get("blocks")])[0]
        for t in _all_texts(resp.body):
            assert _live_markup(t) == [], t
        # user input echoed back (impact symbol, unknown command) is inert too
        h.command("impact <!channel>", name="imp")
        got = h.fake.wait_for(lambda: h.fake.responses("imp"))
        for c in got:
            for t in _all_texts(c.body):
                assert _live_markup(t) == [], t


def test_one_escaping_function_serves_slack_and_teams():
    from bot.chat import escape as esc
    from bot.slack import blocks as bk
    from bot.teams import cards

    assert bk.escape("a <!channel> & b") == esc.inert("a <!channel> & b", "slack") == "a &lt;!channel&gt; &amp; b"
    hostile_md = "see [the docs](https://evil.example/x) and <at>Everyone</at>"
    answer = StubService(text=hostile_md, citations=[citation(symbol="[x](https://evil.example)")]).ask("q")
    card = cards.answer_card(answer, templates={}, ref="r", conversation="c", message="m")
    texts = json.dumps(card)
    assert "](https://evil.example" not in texts and "<at>" not in texts
    assert "the docs" in texts and "evil.example" in texts  # visible, just not a link
    assert "](https://evil.example" not in cards.help_text("unknown [x](https://evil.example)")


# --------------------------------------------------------------------------- 4: body cap, no body in logs

def test_oversized_body_is_refused_413_before_it_is_read_and_never_logged(caplog):
    from bot.slack.server import DEFAULT_MAX_BODY_BYTES

    caplog.set_level(logging.DEBUG)
    marker = "BODYMARKER-7f3a"
    with Harness(StubService()) as h:
        big = (marker * (DEFAULT_MAX_BODY_BYTES // len(marker) + 10)).encode()
        r = h.http.post(h.url, content=big, headers={"Content-Type": "application/json",
                                                     "X-Slack-Signature": "v0=bad",
                                                     "X-Slack-Request-Timestamp": str(int(time.time()))})
        assert r.status_code == 413

        def chunks():  # no Content-Length: the stream is cut once over the cap
            for _ in range(DEFAULT_MAX_BODY_BYTES // 65536 + 4):
                yield b"x" * 65536

        r = h.http.post(h.url, content=chunks(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        # a body under the cap with a bad signature: 401, and its body is not logged
        small = json.dumps({"type": "event_callback", "note": marker * 100})
        resp, _ = h.post_raw(small, "application/json", secret="not-the-secret")
        assert resp.status_code == 401
    assert not [r for r in caplog.records if marker in r.getMessage()]


# --------------------------------------------------------------------------- 5: malformed requests

@pytest.mark.parametrize("case", ["broken_json_unsigned", "timestamp_abc", "broken_json_signed",
                                  "broken_form_signed"])
def test_malformed_requests_get_401_or_400_and_one_log_line(case, caplog):
    caplog.set_level(logging.INFO)
    with Harness(StubService()) as h:
        caplog.clear()
        if case == "broken_json_unsigned":
            resp, _ = h.post_raw('{"type": "event_callback", ', "application/json", signed=False)
            expected = 401
        elif case == "timestamp_abc":
            resp, _ = h.post_raw('{"type": "event_callback"}', "application/json", signed=False,
                                 headers={"X-Slack-Request-Timestamp": "abc", "X-Slack-Signature": "v0=00"})
            expected = 401
        elif case == "broken_json_signed":
            resp, _ = h.post_raw('{"type": "event_callback", ', "application/json")
            expected = 400
        else:
            resp, _ = h.post_raw("payload=%7Bnot-json", "application/x-www-form-urlencoded")
            expected = 400
        assert resp.status_code == expected, resp.text
        time.sleep(0.2)
    ours = [r for r in caplog.records if r.name.startswith(("bot.", "slack_bolt", "uvicorn.error"))]
    assert not [r for r in ours if r.exc_info], [r.getMessage() for r in ours]
    assert len([r for r in ours if r.levelno >= logging.INFO]) <= 1, [r.getMessage() for r in ours]


# --------------------------------------------------------------------------- 6: question cap

def test_overlong_question_gets_a_clear_reply_and_is_neither_asked_nor_logged():
    from sqlalchemy import func, select

    from bot.answer.question import MAX_QUESTION_CHARS
    from bot.querylog.models import Query

    service = StubService()
    with Harness(service) as h:
        h.mention("why " * (MAX_QUESTION_CHARS // 4 + 50))
        post = h.fake.wait_for(lambda: h.fake.posts())[0]
        assert f"{MAX_QUESTION_CHARS:,}" in post.body["text"] and "characters" in post.body["text"]
        h.command("ask " + "y" * (MAX_QUESTION_CHARS + 1), name="long")
        resp = h.fake.wait_for(lambda: [c for c in h.fake.responses("long") if "characters" in
                                        (c.body.get("text") or "")])
        assert resp
        time.sleep(0.3)
        assert service.asked == []
        with h.sessions() as s:
            assert s.scalar(select(func.count()).select_from(Query)) == 0
        # a question at the limit is still answered
        h.mention("y" * (MAX_QUESTION_CHARS - 20))
        h.fake.wait_for(lambda: [c for c in h.fake.posts() if c.body.get("blocks")])
        assert len(service.asked) == 1


def test_answer_service_refuses_an_overlong_question_before_retrieval():
    from bot.answer.question import MAX_QUESTION_CHARS, QuestionTooLong
    from bot.answer.service import AnswerService

    class Boom:
        def search(self, *a, **k):
            raise AssertionError("retrieval must not run")

    service = AnswerService.__new__(AnswerService)
    service.retriever = Boom()
    with pytest.raises(QuestionTooLong, match=f"{MAX_QUESTION_CHARS:,}"):
        service.ask("x" * (MAX_QUESTION_CHARS + 1))


def test_lone_surrogates_are_stripped_not_apologised_for():
    service = StubService()
    with Harness(service) as h:
        # JSON with a lone surrogate escape, as a client may send it
        ts = h.new_ts()
        env = h.envelope({"type": "app_mention", "user": "U0000001", "ts": ts, "channel": "C0000001",
                          "text": "<@UBOT0001> where is tax \ud800computed?", "event_ts": ts})
        resp, _ = h.post_raw(json.dumps(env), "application/json")
        assert resp.status_code == 200
        post = h.fake.wait_for(lambda: h.fake.posts())[0]
        assert "something went wrong" not in post.body["text"]
        q = service.asked[0][0]
        assert "\ud800" not in q and "tax" in q and "computed?" in q
        q.encode("utf-8")  # encodable: what the embedder and Weaviate need


# --------------------------------------------------------------------------- 7: slash replay

def test_replayed_slash_command_is_answered_once():
    service = StubService()
    with Harness(service) as h:
        form = {"token": "legacy", "team_id": "T0000001", "channel_id": "C0000001", "user_id": "U0000001",
                "command": "/coderag", "text": "ask where is tax computed?",
                "response_url": h.fake.response_url("replay"), "trigger_id": "998877.665544.replayed"}
        body = urlencode(form)
        codes = [h.post_raw(body, "application/x-www-form-urlencoded")[0].status_code for _ in range(3)]
        assert codes == [200, 200, 200]
        h.fake.wait_for(lambda: [c for c in h.fake.responses("replay") if c.body.get("blocks")])
        time.sleep(1.0)
        assert len(service.asked) == 1
        assert len([c for c in h.fake.responses("replay") if c.body.get("blocks")]) == 1
        # a new invocation (new trigger_id) of the same text is answered
        h.post_raw(urlencode(dict(form, trigger_id="998877.665544.fresh")), "application/x-www-form-urlencoded")
        h.fake.wait_for(lambda: len(service.asked) == 2)
