"""The admin page in a real browser (Chromium driven by Playwright) on the app ``coderag
serve`` serves, with the real Bolt app and a fake Slack over real HTTP: sign in, add a
repository and re-sync it, change a channel's policy, see a question appear after a
signed Slack event, export a 👎 with its reason as a golden case, and approve a draft
of a "draft for review" channel into the asker's thread.

Each page is photographed on the way (``CODERAG_ADMIN_SCREENSHOTS=DIR`` keeps them
there; the manual's are in docs/img/admin/)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.slack import blocks as bk
from helpers.admin_site import ADMIN_TOKEN, admin_stack, base_env
from helpers.browser import browser
from helpers.fake_slack import BOT_USER_ID


@pytest.fixture
def shots(tmp_path) -> Path:
    """Where the screenshots go."""
    where = Path(os.environ.get("CODERAG_ADMIN_SCREENSHOTS") or tmp_path / "shots")
    where.mkdir(parents=True, exist_ok=True)
    return where


def _mention(stack, text: str, channel: str, ts: str, event_id: str) -> None:
    event = {"type": "app_mention", "user": "U0000001", "text": f"<@{BOT_USER_ID}> {text}", "ts": ts,
             "channel": channel, "event_ts": ts}
    assert stack.slack_event(event, event_id).status_code == 200


def _feedback_value(post) -> str:
    """The 👎 button's value in a posted answer."""
    for block in post.body.get("blocks") or []:
        for el in block.get("elements") or []:
            if el.get("action_id") == bk.FEEDBACK_DOWN:
                return el["value"]
    raise AssertionError("no feedback button in the answer")


def test_an_operator_runs_coderag_from_the_admin_page(tmp_path, shots):
    synced: list[tuple[str, str]] = []

    def sync(_deps, name, kind):  # the re-sync use case itself is tested in test_admin_sync.py
        synced.append((name, kind))
        return "full to 1a2b3c4: 12 changed, 0 deleted"

    env = base_env(tmp_path / "home", CODERAG_REPOS=json.dumps([{"name": "shop", "url": "https://github.com/acme/shop.git"}]),
                   CODERAG_PUBLIC_URL="http://coderag.test")
    with admin_stack(env, sync=sync) as stack, browser() as chromium:
        page = chromium.new_page(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        base = stack.base

        # sign in with the token
        response = page.goto(f"{base}/admin/sources")
        assert response.status == 401
        page.screenshot(path=str(shots / "admin-login.png"))
        page.fill("#token", ADMIN_TOKEN)
        page.click("text=Sign in with the token")
        page.wait_for_url(f"{base}/admin/sources")

        # add a repository, then re-sync it
        page.select_option("#kind", "git")
        page.fill("#name", "payments")
        page.fill("#url", "https://github.com/acme/payments.git")
        page.fill("#url_template", "https://github.com/acme/payments/blob/{commit}/{path}#L{start}-L{end}")
        page.click("text=Add source")
        assert "Added payments" in page.inner_text(".flash")
        row = page.locator("#source-payments")
        assert "github.com/acme/payments.git" in row.inner_text()
        row.locator("text=Re-sync now").click()
        assert "Re-sync of payments started" in page.inner_text(".flash")
        stack.fake.wait_for(lambda: synced == [("payments", "git")])
        page.screenshot(path=str(shots / "admin-sources.png"), full_page=True)

        # change a channel's policy: C0000001 reads only payments and answers questions
        page.click("header >> text=Channels")
        page.fill("#channel", "C0000001")
        page.select_option("#list", "own")
        page.check("input[name=sources][value=payments]")
        page.select_option("#reply_mode", "questions")
        page.click("text=Save policy")
        assert "C0000001: reads payments" in page.inner_text(".flash")
        assert "answer questions" in page.inner_text("#channel-C0000001")
        page.locator("#channel-C0000001").locator("text=Edit").click()  # the form holds its current policy
        assert page.input_value("#channel") == "C0000001" and page.input_value("#list") == "own"
        assert page.input_value("#reply_mode") == "questions"
        assert page.is_checked("input[name=sources][value=payments]")
        page.screenshot(path=str(shots / "admin-channels.png"), full_page=True)

        # a signed Slack event: the question shows up on the questions page
        _mention(stack, "where is the refund computed?", "C0000001", "1800000000.000100", "Ev0000100")
        answer = stack.fake.wait_for(lambda: stack.fake.posts("C0000001"))[0]
        stack.wait_logged("1800000000.000100")
        assert stack.service.scopes[-1] == frozenset({"payments"})  # the page's allow-list, enforced
        page.click("header >> text=Questions")
        page.wait_for_selector("text=where is the refund computed?")
        page.select_option("#outcome", "answered")
        page.click("text=Filter")
        assert page.locator(".query").count() == 1
        page.screenshot(path=str(shots / "admin-questions.png"), full_page=True)

        # a 👎 with its reason, exported as a golden case
        stack.vote_down(_feedback_value(answer), channel="C0000001", message_ts="1800000000.000100",
                        reason="incorrect", text="refunds are computed in billing, not payments")
        page.click("header >> text=Gaps")
        gap = page.locator(".query", has_text="where is the refund computed?")
        gap.wait_for()
        assert "refunds are computed in billing" in gap.inner_text()
        page.screenshot(path=str(shots / "admin-gaps.png"), full_page=True)
        gap.locator("input[name=ids]").check()
        with page.expect_download() as download:
            page.click("text=Export selected as golden cases")
        lines = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
        case = json.loads(lines[0])
        assert len(lines) == 1 and case["question"] == "where is the refund computed?" and case["expected"] == []
        assert case["id"].startswith("querylog-") and case["feedback"] == [
            "incorrect: refunds are computed in billing, not payments"]

        # draft for review: C0000005's answers wait for a reviewer, announced in CREVIEW01
        page.click("header >> text=Channels")
        assert page.input_value("#channel") == ""  # a new channel: an empty form
        page.fill("#channel", "C0000005")
        page.select_option("#list", "inherit")
        page.select_option("#reply_mode", "review")
        page.click("text=Save policy")
        page.click("header >> text=Reviews")
        page.fill("#review-channel", "CREVIEW01")
        page.click("text=Save")
        _mention(stack, "can I refund a partial order?", "C0000005", "1800000000.000200", "Ev0000200")
        notice = stack.fake.wait_for(lambda: stack.fake.posts("CREVIEW01"))[0]
        stack.wait_logged("1800000000.000200")
        assert "can I refund a partial order?" in notice.body["text"] and "http://coderag.test/admin/reviews" in \
            notice.body["text"]
        assert not [p for p in stack.fake.posts("C0000005") if p.body.get("blocks")]  # nothing answered yet
        page.reload()
        draft = page.locator(".draft", has_text="can I refund a partial order?")
        assert "Answer to: can I refund a partial order?" in draft.inner_text()
        page.screenshot(path=str(shots / "admin-reviews.png"), full_page=True)
        draft.locator("text=Approve and post").click()
        assert "approved and posted" in page.inner_text(".flash")
        posted = stack.fake.wait_for(lambda: [p for p in stack.fake.posts("C0000005") if p.body.get("blocks")])
        assert posted[0].body["thread_ts"] == "1800000000.000200"
        assert "Answer to: can I refund a partial order?" in posted[0].body["text"]

        # the remaining pages, and the change log naming who did what
        for name in ("drift", "health"):
            page.click(f"header >> text={name.capitalize()}")
            page.screenshot(path=str(shots / f"admin-{name}.png"), full_page=True)
        page.click("header >> text=Changes")
        log = page.inner_text("table")
        for action in ("source.add", "source.sync", "channel.set", "golden.export", "value.set", "draft.approve"):
            assert action in log, action
        assert "\tadmin\t" in log  # who: the shared token's name (the Who column)
        page.screenshot(path=str(shots / "admin-changes.png"), full_page=True)
