"""The "draft for review" reply mode over real HTTP (the Bolt app, the admin page, the
fake Slack): the answer waits as a draft, the asker is told, the review channel gets a
notice; an edit posts the reviewer's text in the asker's thread, a decline posts
nothing, a post Slack refuses leaves the draft pending; every decision is logged."""
from __future__ import annotations

from helpers.admin_site import admin_stack, base_env, csrf_of
from helpers.fake_slack import BOT_USER_ID


def _ask(stack, text: str, channel: str, ts: str, event_id: str) -> None:
    event = {"type": "app_mention", "user": "U0000001", "text": f"<@{BOT_USER_ID}> {text}", "ts": ts,
             "channel": channel, "event_ts": ts}
    assert stack.slack_event(event, event_id).status_code == 200


def _thread(stack, channel: str, ts: str) -> list:
    return [p for p in stack.fake.posts(channel) if p.body.get("thread_ts") == ts]


def test_edit_decline_and_a_refused_post(tmp_path):
    env = base_env(tmp_path / "home", CODERAG_REVIEW_CHANNEL="CREVIEW01")
    with admin_stack(env) as stack, stack.client() as c:
        stack.sign_in(c)
        csrf = csrf_of(c.get("/admin/channels").text)
        c.post("/admin/channels/set", data={"csrf_token": csrf, "channel": "C0000005", "list": "inherit",
                                            "reply_mode": "review"})
        _ask(stack, "is there a rate limit on refunds?", "C0000005", "1800000000.000300", "Ev0000300")
        told = stack.fake.wait_for(lambda: _thread(stack, "C0000005", "1800000000.000300"))
        assert "reviewer checks it" in told[0].body["text"] and not told[0].body.get("blocks")
        notice = stack.fake.wait_for(lambda: stack.fake.posts("CREVIEW01"))[0]
        assert "is there a rate limit on refunds?" in notice.body["text"]
        # no CODERAG_PUBLIC_URL: the notice says where to review, with no link to a made-up address
        assert "`/admin/reviews`" in notice.body["text"] and "|Review it>" not in notice.body["text"]
        assert "<http" not in notice.body["text"] and "</admin" not in notice.body["text"]
        stack.wait_logged("1800000000.000300")
        assert "rate limit on refunds" in c.get("/admin/questions").text  # logged as every answer is

        page = c.get("/admin/reviews").text
        draft_id = int(page.split('id="draft-')[1].split('"')[0])
        stack.fake.fail_next["chat.postMessage"] = [(500, {})]
        r = c.post(f"/admin/reviews/{draft_id}/decide", data={"csrf_token": csrf, "decision": "edit",
                                                             "text": "Yes: 10 refunds a minute (billing/limits.py)."})
        assert r.status_code == 303 and "still pending" in c.get("/admin/reviews").text
        c.post(f"/admin/reviews/{draft_id}/decide", data={"csrf_token": csrf, "decision": "edit",
                                                         "text": "Yes: 10 refunds a minute (billing/limits.py)."})
        posted = stack.fake.wait_for(lambda: [p for p in _thread(stack, "C0000005", "1800000000.000300")
                                              if "10 refunds a minute" in p.body.get("text", "")])
        assert len(posted) == 2  # the attempt Slack refused (recorded by the fake) and the post
        again = c.post(f"/admin/reviews/{draft_id}/decide", data={"csrf_token": csrf, "decision": "approve"})
        assert again.status_code == 303 and "already edited" in c.get("/admin/reviews").text

        _ask(stack, "who owns the refund service?", "C0000005", "1800000000.000400", "Ev0000400")
        stack.fake.wait_for(lambda: len(stack.fake.posts("CREVIEW01")) == 2)
        stack.wait_logged("1800000000.000400")
        page = c.get("/admin/reviews").text
        second = int(page.split('id="draft-')[1].split('"')[0])
        c.post(f"/admin/reviews/{second}/decide", data={"csrf_token": csrf, "decision": "decline"})
        assert [p.body["text"] for p in _thread(stack, "C0000005", "1800000000.000400")] == [
            told[0].body["text"]]  # only the "a reviewer checks it" note
        questions = c.get("/admin/questions").text  # what was posted, not only what was drafted
        assert "posted as edited by admin<" in questions and "10 refunds a minute" in questions
        assert "draft declined by admin: not posted" in questions  # the shared token's name
        log = c.get("/admin/changes").text
        assert "draft.edit" in log and "draft.decline" in log and "<td>admin</td>" in log

        # a channel that is not in review mode is answered directly
        _ask(stack, "where is tax computed?", "C0000006", "1800000000.000500", "Ev0000500")
        stack.fake.wait_for(lambda: [p for p in _thread(stack, "C0000006", "1800000000.000500") if p.body.get("blocks")])
