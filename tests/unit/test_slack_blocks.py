"""Block Kit rendering, escaping, splitting, links, the question heuristic and parsing."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from bot.answer.service import Answer, Turn
from bot.slack import blocks as bk
from bot.slack.commands import parse
from bot.chat.links import REPO_URL_EXAMPLES
from common.settings import SlackSettings
from bot.slack.threads import looks_like_question, plain_text, thread_turns
from helpers.slack_harness import COMMIT, citation
from common.settings import load
from common.errors import BadInput


def answer(text, citations=None):
    return Answer(question="q", text=text, citations=[citation()] if citations is None else citations,
                  hits=[], no_coverage=False, model="stub")


def test_escape():
    assert bk.escape("a & b < c > d") == "a &amp; b &lt; c &gt; d"
    assert bk.escape("&amp;") == "&amp;amp;"


def test_long_answer_split_into_sections_and_messages():
    text = "\n".join(f"line {i} " + "x & y " * 40 for i in range(2000))  # ~500 kB after escaping
    messages = bk.answer_messages(answer(text), templates={}, channel="C1", query_ts="1.2")
    assert len(messages) > 1
    for blocks in messages:
        assert len(blocks) <= bk.MESSAGE_BLOCK_LIMIT
        for b in blocks:
            if b["type"] == "section":
                assert len(b["text"]["text"]) <= bk.SECTION_LIMIT
    # nothing lost, nothing reordered, entities never cut
    joined = "\n".join(b["text"]["text"] for m in messages for b in m if b["type"] == "section"
                       and not b["text"]["text"].startswith("*Sources*"))
    assert joined == bk.escape(text)
    assert messages[-1][-1]["type"] == "actions"


def test_single_huge_line_is_cut_without_breaking_entities():
    text = "<&>" * 5000
    chunks = bk.split_mrkdwn(text)
    assert all(len(c) <= bk.SECTION_LIMIT for c in chunks)
    assert "".join(chunks) == bk.escape(text)
    assert all(c.endswith(";") for c in chunks)


def test_snippets_become_code_blocks_even_when_split():
    text = "[1] src/a.py:1-9@abc\n" + "\n".join(f"    code line {i} <tag>" for i in range(400)) + "\nafter"
    chunks = bk.split_mrkdwn(text)
    assert len(chunks) > 1
    assert chunks[0].startswith("[1] src/a.py:1-9@abc")
    assert all(c.startswith("```\n") for c in chunks[1:])
    assert sum(c.count("```") for c in chunks) % 2 == 0
    for c in chunks:
        assert c.count("```") % 2 == 0
    assert "code line 0 &lt;tag&gt;" in chunks[0] + chunks[1]
    assert chunks[-1].endswith("```\nafter")


@pytest.mark.parametrize("host, expected", [
    ("github", f"https://github.com/ORG/REPO/blob/{COMMIT}/src/tax.py#L10-L24"),
    ("gitlab", f"https://gitlab.com/GROUP/REPO/-/blob/{COMMIT}/src/tax.py#L10-24"),
    ("bitbucket", f"https://bitbucket.org/WORKSPACE/REPO/src/{COMMIT}/src/tax.py#lines-10:24"),
])
def test_url_templates(host, expected):
    line = bk.citation_line(citation(), {"shop": REPO_URL_EXAMPLES[host]}, 1)
    assert line.startswith(f"[1] <{expected}|src/tax.py:L10-L24>")
    assert "shop@0123456" in line


def test_no_template_shows_plain_label_and_paths_are_quoted():
    assert bk.citation_line(citation(), {}, 2).startswith("[2] `src/tax.py:10-24@0123456`")
    c = citation(path="docs/a b&c.md")
    line = bk.citation_line(c, {"shop": REPO_URL_EXAMPLES["github"]})
    assert f"/blob/{COMMIT}/docs/a%20b%26c.md#L10-L24|docs/a b&amp;c.md:L10-L24>" in line


def test_freshness_and_feedback_blocks():
    cites = [citation(age=timedelta(hours=2)), citation(path="b.py", age=timedelta(hours=2)),
             citation(repo="ops", commit="ffffffffffff", age=timedelta(minutes=5))]
    now = datetime.now(timezone.utc) + timedelta(seconds=1)
    assert bk.freshness_text(cites, now) == "shop@0123456 indexed 2 h ago · ops@fffffff indexed 5 min ago"
    blocks = bk.answer_messages(answer("hi", cites), templates={}, channel="C1", query_ts="9.9")[0]
    assert [b["type"] for b in blocks] == ["section", "divider", "section", "context", "actions"]


def test_no_coverage_answer_has_no_sources_but_buttons():
    blocks = bk.answer_messages(answer("I found nothing relevant.", []), templates={}, channel="C1",
                                query_ts="1")[0]
    assert [b["type"] for b in blocks] == ["section", "actions"]


def test_impact_is_capped_at_50_blocks():
    callers = [{"path": f"src/m{i:04d}.py", "symbol": "f" * 200, "line": j, "depth": 1, "is_test": False,
                "resolved": True} for i in range(500) for j in range(3)]
    blocks = bk.impact_blocks({"symbol": "x", "repo": "r", "commit": "c" * 40, "definitions": [],
                               "callers": callers}, {})
    assert len(blocks) == bk.MESSAGE_BLOCK_LIMIT
    assert blocks[-1]["type"] == "context"
    assert all(len(b["text"]["text"]) <= bk.SECTION_LIMIT for b in blocks if b["type"] == "section")


@pytest.mark.parametrize("text", [
    "how do I run the tests locally", "Where is the retry backoff configured?",
    "anyone know which service owns billing", "Can someone explain the deploy pipeline",
    "I'm looking for the code that sends invoices", "the `Cart.total` function returns NaN, why?",
    "is there a runbook for the queue outage",
])
def test_questions(text):
    assert looks_like_question(text)


@pytest.mark.parametrize("text", [
    "thanks!", "deploying the api now", "ok?", "lunch at noon", "merged the PR, all green",
    "see ```how does this work?``` in the doc",
])
def test_not_questions(text):
    assert not looks_like_question(text)


def test_plain_text_and_turns():
    assert plain_text("<@UBOT> see <https://x.io/a|the doc> &amp; <#C1|general> &lt;3", strip_user="UBOT") == \
        "see the doc & #general <3"
    msgs = [{"ts": "1.0", "user": "U1", "text": "<@UBOT> how?"},
            {"ts": "2.0", "user": "UBOT", "bot_id": "B1", "text": "like this"},
            {"ts": "2.5", "bot_id": "BOTHER", "subtype": "bot_message", "text": "CI passed"},
            {"ts": "2.7", "user": "U2", "subtype": "channel_join", "text": "joined"},
            {"ts": "3.0", "user": "U1", "text": "and then?"},
            {"ts": "4.0", "user": "U1", "text": "later"}]
    turns = thread_turns(msgs, current_ts="3.0", bot_user_id="UBOT", bot_id="B1")
    assert turns == [Turn("user", "how?"), Turn("assistant", "like this")]


@pytest.mark.parametrize("text, name, arg, error", [
    ("", "help", "", False), ("help", "help", "", False), ("ask  why x?", "ask", "why x?", False),
    ("why x?", "ask", "why x?", False), ("IMPACT Cart.total", "impact", "Cart.total", False),
    ("impact", "impact", "", True), ("ask", "ask", "", True), ("status", "status", "", False),
])
def test_parse(text, name, arg, error):
    cmd = parse(text)
    assert (cmd.name, cmd.arg, cmd.error is not None) == (name, arg, error)


def test_settings_from_the_groups_read_at_start_up():
    app = load({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_API_URL": "http://127.0.0.1:9/api",
                "CODERAG_ONBOARDING_CHANNELS": " C1, C2 ,", "CODERAG_SLACK_WORKERS": "1",
                "CODERAG_REPO_URLS": '{"shop": "https://x/{commit}/{path}"}'})
    s = app.slack
    assert isinstance(s, SlackSettings) and s.workers == 2
    assert s.api_url == "http://127.0.0.1:9/api/" and s.onboarding_channels == {"C1", "C2"}
    assert not s.socket_mode and app.chat.repo_urls == {"shop": "https://x/{commit}/{path}"}
    assert load({}).slack.api_url == "https://slack.com/api/" and load({}).chat.repo_urls == {}
    with pytest.raises(BadInput):
        s.check()  # no signing secret in HTTP mode
    expected = """CODERAG_REPO_URLS must be a JSON object {"repo": "url template with {path}"}, got """
    for raw, problem in (("[1]", "the JSON is not an object"), ('{"shop": 1}', '["shop"] is not a string'),
                         ('{"shop": "https://x/no-path"}', '["shop"] has no {path} placeholder'),
                         ("{", "not valid JSON (Expecting property name enclosed in double quotes at character 2)")):
        with pytest.raises(BadInput) as info:
            load({"CODERAG_REPO_URLS": raw})  # at start-up, one line naming the variable
        assert str(info.value) == f"{expected}{raw!r}: {problem}"


def test_manifest_and_url_examples():
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[2] / "deploy"
    m = yaml.safe_load((root / "slack-manifest.yml").read_text())
    assert set(m["oauth_config"]["scopes"]["bot"]) >= {
        "app_mentions:read", "chat:write", "channels:history", "groups:history", "im:history", "im:read",
        "im:write", "reactions:write", "commands"}
    assert set(m["settings"]["event_subscriptions"]["bot_events"]) == {
        "app_mention", "message.channels", "message.groups", "message.im"}
    assert m["features"]["slash_commands"][0]["command"] == "/coderag"
    assert m["settings"]["interactivity"]["is_enabled"] is True
    urls = load({"CODERAG_REPO_URLS": (root / "repo-urls.example.json").read_text()}).chat.repo_urls
    assert set(urls) == {"shop", "payments", "infra"}


def test_model_answer_renders_prose_sources_and_notes_once():
    a = answer("Prose [1].\n\nSources:\n[1] src/tax.py:10-24@0123456\nNote: stale")
    a.prose, a.notes = "Prose [1].", ["Note: stale"]
    blocks = bk.answer_messages(a, templates={}, channel="C1", query_ts="1")[0]
    assert blocks[0]["text"]["text"] == "Prose [1]."
    texts = [e["text"] for b in blocks if b["type"] == "context" for e in b["elements"]]
    assert texts[-1] == "Note: stale"
    plain = answer("extractive text")
    plain.notes = ["already in text"]
    blocks = bk.answer_messages(plain, templates={}, channel="C1", query_ts="1")[0]
    assert "already in text" not in str(blocks)
