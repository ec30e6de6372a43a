"""The Teams front end over real HTTP: Activity JSON posted to ``/api/messages`` of the
``coderag serve`` ASGI app (uvicorn in a thread, anonymous mode unless stated), replies
recorded by a fake connector service (the activities' serviceUrl), the query log in a
real SQLite database."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from bot.querylog.models import Feedback, Query
from bot.teams.app import db_key
from bot.teams.auth import TeamsAuth
from bot.tenancy import ChannelPolicy
from common.settings import load
from helpers.slack_harness import COMMIT
from helpers.teams_harness import (TEAM_CHANNEL, TENANT, USER, Harness, StubService, card_of, card_texts,
                                   wait)


@pytest.fixture(autouse=True)
def database(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'teams.db'}"
    monkeypatch.setenv("CODERAG_DATABASE_URL", url)
    monkeypatch.setenv("CODERAG_HOME", str(tmp_path / "home"))
    return url


def _queries(h) -> list[Query]:
    with h.sessions() as s:
        return list(s.scalars(select(Query)))


def _feedback(h) -> list[Feedback]:
    with h.sessions() as s:
        return list(s.scalars(select(Feedback)))


def test_channel_mention_gets_a_threaded_adaptive_card_and_is_logged():
    service = StubService()
    with Harness(service) as h:
        act = h.activity("where is the price with tax computed?")
        resp = h.post(act)
        assert resp.status_code == 202
        (msg,) = h.wait_messages(1)
        # the reply goes to the question's thread: conversation id with ;messageid=, replyToId = question id
        assert msg.conversation == f"{TEAM_CHANNEL};messageid={act['id']}"
        assert msg.reply_to == act["id"] and msg.path.endswith(f"/activities/{act['id']}")
        assert msg.body.get("replyToId") == act["id"]
        assert [c.body["type"] for c in h.fake.calls][0] == "typing"
        # the mention was stripped before asking
        assert service.asked[0][0] == "where is the price with tax computed?"
        card = card_of(msg)
        assert card["type"] == "AdaptiveCard" and card["version"] == "1.5"
        texts = card_texts(card)
        assert texts[0].startswith("Answer to: where is the price with tax computed?")
        assert "**Sources**" in texts
        link = f"https://github.com/acme/shop/blob/{COMMIT}/src/tax.py#L10-L24"
        assert any(t.startswith(f"[1] [src/tax.py:L10-L24]({link})") and "calculatePriceWithTax" in t
                   for t in texts)
        assert "shop@0123456 indexed 2 h ago" in texts
        votes = [a["data"] for a in card["actions"]]
        assert [a["type"] for a in card["actions"]] == ["Action.Submit", "Action.Submit"]
        assert [v["vote"] for v in votes] == [1, -1] and {v["action"] for v in votes} == {"feedback"}

        (q,) = wait(lambda: _queries(h))
        assert q.source == "teams" and q.ref == votes[0]["ref"]
        assert q.question == "where is the price with tax computed?" and q.workspace == TENANT
        assert q.channel == db_key(act["conversation"]["id"]) and len(q.channel) <= 40
        assert q.message_ts == act["id"] and q.thread_ts == act["id"]
        from bot.querylog.privacy import UserHasher  # user ids are hashed by default

        assert q.user == UserHasher.from_settings(load().querylog, h.sessions)(USER["aadObjectId"]) != USER["aadObjectId"]
        assert q.retrieve_ms == 1.0 and q.post_ms is not None


def test_reply_in_an_existing_thread_keeps_the_thread_root():
    with Harness(StubService()) as h:
        act = h.activity("and where is the discount applied?", thread_root="1712000000000")
        assert h.post(act).status_code == 202
        (msg,) = h.wait_messages(1)
        assert msg.conversation == f"{TEAM_CHANNEL};messageid=1712000000000" and msg.reply_to == act["id"]
        (q,) = wait(lambda: _queries(h))
        assert q.thread_ts == "1712000000000" and q.message_ts == act["id"]


def test_personal_chat_without_mention():
    service = StubService()
    with Harness(service) as h:
        act = h.activity("how is tax rounded?", kind="personal", mention=False)
        assert h.post(act).status_code == 202
        (msg,) = h.wait_messages(1)
        assert msg.conversation == act["conversation"]["id"] and msg.reply_to == act["id"]
        assert service.asked[0][0] == "how is tax rounded?"
        assert "Answer to: how is tax rounded?" in card_texts(card_of(msg))[0]
        (q,) = wait(lambda: _queries(h))
        assert q.channel.startswith("t:") and len(q.channel) == 40  # long personal ids are hashed


def test_feedback_submit_is_stored_in_the_feedback_table():
    with Harness(StubService()) as h:
        act = h.activity("where is tax?")
        h.post(act)
        (msg,) = h.wait_messages(1)
        up, down = [a["data"] for a in card_of(msg)["actions"]]
        wait(lambda: _queries(h))
        # Action.Submit in Teams: a message activity whose value is the button data, replying to the card
        click = h.activity(None, value=down, thread_root=act["id"])
        click["replyToId"] = "reply-1001"
        assert h.post(click).status_code == 202
        thanks = h.wait_messages(2)[1]
        assert "Thanks for the feedback 👎" in thanks.body["text"] and thanks.reply_to == click["id"]
        (fb,) = _feedback(h)
        (q,) = _queries(h)
        from bot.querylog.privacy import UserHasher

        assert fb.vote == -1 and fb.query_id == q.id and fb.user == UserHasher.from_settings(load().querylog, h.sessions)(USER["aadObjectId"])
        assert (fb.channel, fb.message_ts) == (q.channel, q.message_ts)
        # a second click by the same user changes the vote, no second row
        h.post(h.activity(None, value=up, thread_root=act["id"]))
        h.wait_messages(3)
        (fb,) = _feedback(h)
        assert fb.vote == 1


def test_feedback_execute_invoke_returns_an_invoke_response():
    with Harness(StubService()) as h:
        act = h.activity("where is tax?")
        h.post(act)
        (msg,) = h.wait_messages(1)
        up = card_of(msg)["actions"][0]["data"]
        (q,) = wait(lambda: _queries(h))
        invoke = h.activity(None, type_="invoke", name="adaptiveCard/action", thread_root=act["id"],
                            value={"action": {"type": "Action.Execute", "verb": "feedback", "data": up},
                                   "trigger": "manual"})
        resp = h.post(invoke)
        assert resp.status_code == 200
        assert resp.json()["statusCode"] == 200 and "👍" in resp.json()["value"]
        (fb,) = _feedback(h)
        assert fb.vote == 1 and fb.query_id == q.id
        bad = h.activity(None, type_="invoke", name="adaptiveCard/action",
                         value={"action": {"type": "Action.Execute", "data": {"action": "feedback", "vote": 7}}})
        assert h.post(bad).json()["statusCode"] == 400
        assert len(_feedback(h)) == 1


def test_a_failing_feedback_store_is_logged_and_answered_as_no_vote(caplog):
    """Both feedback roads (Action.Submit message, Action.Execute invoke) survive a query
    log that cannot store the vote: it is logged, the message gets no thanks and the
    invoke a 400, as for an invalid vote."""
    from sqlalchemy import text

    with Harness(StubService()) as h:
        act = h.activity("where is tax?")
        h.post(act)
        (msg,) = h.wait_messages(1)
        up = card_of(msg)["actions"][0]["data"]
        wait(lambda: _queries(h))
        with h.sessions.begin() as s:  # the real table goes: every vote write now fails
            s.execute(text("DROP TABLE feedback"))
        assert h.post(h.activity(None, value=up, thread_root=act["id"])).status_code == 202
        invoke = h.activity(None, type_="invoke", name="adaptiveCard/action", thread_root=act["id"],
                            value={"action": {"type": "Action.Execute", "verb": "feedback", "data": up},
                                   "trigger": "manual"})
        resp = h.post(invoke)
        assert resp.status_code == 200 and resp.json()["statusCode"] == 400
        wait(lambda: len([r for r in caplog.records if r.getMessage() == "recording Teams feedback failed"]) == 2)
        assert not [c for c in h.fake.calls if "Thanks for the feedback" in str(c.body.get("text"))]


def test_help_status_and_impact_commands():
    report = {"repo": "shop", "commit": COMMIT,
              "definitions": [{"path": "src/tax.py", "start_line": 10, "end_line": 24}],
              "callers": [{"path": "src/cart.py", "line": 42, "symbol": "Cart.total", "is_test": False},
                          {"path": "tests/test_tax.py", "line": 7, "symbol": "test_tax", "is_test": True}]}
    sources = [{"name": "shop", "commit": COMMIT, "chunks": 12, "indexed_at": "2020-01-01T00:00:00Z"}]
    service = StubService(report=report, sources=sources)
    with Harness(service) as h:
        h.post(h.activity("help"))
        (help_msg,) = h.wait_messages(1)
        assert "impact <symbol>" in help_msg.body["text"] and not help_msg.body.get("attachments")

        h.post(h.activity("status"))
        status = h.wait_messages(2)[1]
        texts = card_texts(card_of(status))
        assert texts[0] == "**Indexed sources** (1)" and "0123456" in texts[1] and "⚠️ **stale**" in texts[1]

        h.post(h.activity("impact calculatePriceWithTax"))
        impact = h.wait_messages(3)[2]
        texts = "\n".join(card_texts(card_of(impact)))
        assert "**Impact of** calculatePriceWithTax in shop@0123456" in texts
        assert f"[src/cart.py:L42](https://github.com/acme/shop/blob/{COMMIT}/src/cart.py#L42-L42)" in texts
        assert "**Tests affected**: 1 call site(s)" in texts

        h.post(h.activity("impact"))  # missing argument: usage, no service call
        usage = h.wait_messages(4)[3]
        assert "`impact` needs a function or method name: `@coderag impact …`" in usage.body["text"]
        assert service.asked == [] and _queries(h) == []  # commands are not questions


def test_channel_allow_list_applies_to_teams_conversations():
    service = StubService(sources=[{"name": "shop", "commit": COMMIT}, {"name": "secret", "commit": COMMIT}])
    policy = ChannelPolicy.parse(json.dumps({TEAM_CHANNEL: ["shop"], "*": []}))
    with Harness(service, policy=policy) as h:
        h.post(h.activity("where is tax?"))
        h.wait_messages(1)
        assert service.asked[0][1]["allowed"] == frozenset({"shop"})
        h.post(h.activity("status"))
        texts = card_texts(card_of(h.wait_messages(2)[1]))
        assert any("**shop**" in t for t in texts) and not any("secret" in t for t in texts)
        h.post(h.activity("where?", kind="groupChat"))
        h.wait_messages(3)
        assert service.asked[1][1]["allowed"] == frozenset()


def test_answer_failure_posts_an_apology_and_logs_nothing():
    with Harness(StubService(fail=RuntimeError("weaviate down"))) as h:
        h.post(h.activity("where is tax?"))
        (msg,) = h.wait_messages(1)
        assert "Sorry, something went wrong" in msg.body["text"] and "weaviate" not in msg.body["text"]
        assert _queries(h) == []


@pytest.mark.parametrize("body", [
    "{not json",
    "[1, 2]",
    json.dumps({"type": 5, "conversation": {"id": "x"}}),
    json.dumps({"type": "message", "text": "no conversation", "serviceUrl": "http://127.0.0.1:9/"}),
    json.dumps({"type": "message", "conversation": {"id": "19:x"}, "text": "no service url"}),
    json.dumps({"type": "message", "conversation": "not an object", "serviceUrl": "http://127.0.0.1:9/"}),
])
def test_malformed_activity_is_a_400_and_nothing_is_stored(body):
    service = StubService()
    with Harness(service) as h:
        resp = h.post(body)
        assert resp.status_code == 400, resp.text
        assert service.asked == [] and h.fake.calls == []
        with h.sessions() as s:
            assert s.scalar(select(func.count()).select_from(Query)) == 0
            assert s.scalar(select(func.count()).select_from(Feedback)) == 0


def test_with_a_client_id_requests_without_a_valid_token_are_rejected():
    service = StubService()
    auth = TeamsAuth(client_id="00000000-1111-2222-3333-444444444444", client_secret="s3cret",
                     tenant_id=TENANT)
    with Harness(service, auth=auth) as h:
        assert not h.front.auth_config.ANONYMOUS_ALLOWED
        act = h.activity("where is tax?")
        assert h.post(act).status_code == 401
        assert h.post(act, headers={"Authorization": "Basic abc"}).status_code == 401
        assert h.post(act, headers={"Authorization": "Bearer not-a-jwt"}).status_code == 401
        # a well-formed but unsigned token (alg none) is rejected too, without any network call
        import base64

        def b64(d):
            return base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()

        forged = f"{b64({'alg': 'none', 'typ': 'JWT'})}.{b64({'aud': auth.client_id, 'iss': 'x'})}."
        assert h.post(act, headers={"Authorization": f"Bearer {forged}"}).status_code == 401
        assert service.asked == [] and h.fake.calls == [] and _queries(h) == []


def test_settings_from_the_group_read_at_start_up_and_serving_switch(monkeypatch):
    from bot.teams.routes import teams_enabled
    from common.settings import load

    env = {"CONNECTIONS__SERVICE_CONNECTION__SETTINGS__CLIENTID": "abc",
           "CODERAG_TEAMS_CLIENT_SECRET": "s", "CODERAG_TEAMS_TENANT_ID": "t",
           "CODERAG_TEAMS_SERVICE_HOSTS": " a.example, b.example ,", "CODERAG_TEAMS_WORKERS": "1"}
    auth = TeamsAuth.from_settings(load(env).teams)
    assert (auth.client_id, auth.client_secret, auth.tenant_id, auth.anonymous) == ("abc", "s", "t", False)
    settings = load(env).teams
    assert settings.service_hosts == ("a.example", "b.example") and settings.workers == 2
    assert teams_enabled(load(env).teams) and teams_enabled(load({"CODERAG_TEAMS": "1"}).teams)
    assert not teams_enabled(load({}).teams)
    assert TeamsAuth.from_settings(load({}).teams).configuration().ANONYMOUS_ALLOWED
