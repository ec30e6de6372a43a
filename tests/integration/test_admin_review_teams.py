"""The channel policy on Teams, through the same chat turn as Slack, over real HTTP (the
Teams front end in anonymous mode with a fake connector, the Bolt app and a fake Slack,
the admin page) on real SQLite and PostgreSQL: a Teams channel is put in "draft for
review" on the page; its answer waits as a draft, the asker is told in their thread, the
(Slack) review channel gets a notice; approving posts the drafted card as a reply to the
question, an edit posts the reviewer's text; a Teams chat not in review mode is answered
directly; "answer questions" is refused for a Teams channel, saying why."""
from __future__ import annotations

import pytest

from helpers.admin_site import admin_stack, base_env, csrf_of
from helpers.teams_harness import TEAM_CHANNEL, card_of


def _replies(stack, activity_id: str) -> list:
    """The messages the bot sent in reply to the Teams activity ``activity_id``."""
    return [c for c in stack.connector.messages() if c.reply_to == activity_id]


def _draft_id(c, question: str) -> int:
    page = c.get("/admin/reviews").text
    block = next(b for b in page.split('class="card draft"')[1:] if question in b)
    return int(block.split('id="draft-')[1].split('"')[0])


@pytest.fixture
def stack(tmp_path, db_url):
    env = base_env(tmp_path / "home", db_url, CODERAG_REVIEW_CHANNEL="CREVIEW01")
    with admin_stack(env, teams=True) as s:
        yield s


def test_a_teams_channel_in_review_mode_drafts_and_the_page_posts_the_approved_answer(stack):
    with stack.client() as c:
        stack.sign_in(c)
        csrf = csrf_of(c.get("/admin/channels").text)
        r = c.post("/admin/channels/set", data={"csrf_token": csrf, "channel": TEAM_CHANNEL, "list": "inherit",
                                                "reply_mode": "questions"})
        assert r.status_code == 303
        refused = c.get("/admin/channels").text
        assert "Teams sends a bot only the channel messages that mention it" in refused
        assert f'id="channel-{TEAM_CHANNEL}"' not in refused
        c.post("/admin/channels/set", data={"csrf_token": csrf, "channel": TEAM_CHANNEL, "list": "own",
                                            "other": "shop", "reply_mode": "review"})
        row = c.get("/admin/channels").text.split(f'id="channel-{TEAM_CHANNEL}"')[1].split("</tr>")[0]
        assert "draft for review" in row and "shop" in row  # the Teams id kept as it is, 48 characters

        # a question in the Teams channel: drafted, the asker told, the reviewers notified
        assert stack.teams_message("is there a rate limit on refunds?", "1800000000001").status_code == 202
        told = stack.connector.wait_for(lambda: _replies(stack, "1800000000001"))
        assert "reviewer checks it" in told[0].body["text"] and not told[0].body.get("attachments")
        assert stack.service.scopes[-1] == frozenset({"shop"})  # the page's allow-list, enforced on Teams
        notice = stack.fake.wait_for(lambda: stack.fake.posts("CREVIEW01"))[0]
        assert "is there a rate limit on refunds?" in notice.body["text"] and "Teams" in notice.body["text"]
        draft = _draft_id(c, "is there a rate limit on refunds?")
        assert "teams" in c.get("/admin/reviews").text.split(f'id="draft-{draft}"')[1].split("</form>")[0]
        assert len(_replies(stack, "1800000000001")) == 1  # nothing answered yet

        r = c.post(f"/admin/reviews/{draft}/decide", data={"csrf_token": csrf, "decision": "approve"})
        assert r.status_code == 303 and "approved and posted" in c.get("/admin/reviews").text
        posted = stack.connector.wait_for(lambda: [m for m in _replies(stack, "1800000000001")
                                                   if m.body.get("attachments")])
        assert posted[0].conversation == f"{TEAM_CHANNEL};messageid=1800000000001"  # in the asker's thread
        card = card_of(posted[0])
        assert "Answer to: is there a rate limit on refunds?" in str(card)
        questions = c.get("/admin/questions?surface=teams").text
        assert "rate limit on refunds" in questions and "draft approved by admin" in questions

        # an edit posts the reviewer's text instead
        stack.teams_message("how are refunds retried?", "1800000000002")
        stack.connector.wait_for(lambda: _replies(stack, "1800000000002"))
        draft = _draft_id(c, "how are refunds retried?")
        c.post(f"/admin/reviews/{draft}/decide", data={"csrf_token": csrf, "decision": "edit",
                                                       "text": "Three times, an hour apart (payments team)."})
        edited = stack.connector.wait_for(lambda: [m for m in _replies(stack, "1800000000002")
                                                   if "payments team" in (m.body.get("text") or "")])
        assert not edited[0].body.get("attachments")
        log = c.get("/admin/changes").text
        assert "draft.approve" in log and "draft.edit" in log

        # a Teams chat that is not in review mode is answered directly
        stack.teams_message("where is tax computed?", "1800000000003", kind="groupChat")
        direct = stack.connector.wait_for(lambda: [m for m in _replies(stack, "1800000000003")
                                                   if m.body.get("attachments")])
        # once a channel has an allow-list, one with none of its own and no "*" reads nothing
        assert stack.service.scopes[-1] == frozenset()
        assert "Answer to: where is tax computed?" in str(card_of(direct[0]))
        assert "where is tax computed?" not in c.get("/admin/reviews").text
