"""scripts/render_blocks.py, which makes the manual's picture of a Slack answer: the HTML it
builds from the product's own Block Kit keeps links, code, escaping and every block."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from bot.answer.service import Answer
from bot.slack import blocks as bk
from helpers.slack_harness import citation

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("render_blocks", ROOT / "scripts/render_blocks.py")
render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render)


def test_an_answer_renders_with_its_links_code_and_buttons():
    answer = Answer(question="q", text="`Cart.total` (method, shop/cart.py:10): Sum <b> & tax.",
                    citations=[citation()], hits=[], no_coverage=False, model="stub")
    templates = {citation().repo: "https://git.example/{path}#L{start}"}
    messages = bk.answer_messages(answer, templates=templates, channel="C1", query_ts="1.2")
    html = render.page_html("Where is the total computed?", messages)
    assert "<code>Cart.total</code>" in html
    assert "Sum &lt;b&gt; &amp; tax." in html  # Slack's escaping is kept, never turned into markup
    assert '<a href="https://git.example/' in html and "<https://" not in html  # the link became an anchor
    assert "<b>Sources</b>" in html and "<hr>" in html
    assert "👍 Helpful" in html and "👎 Not helpful" in html


def test_mrkdwn_forms():
    assert render.mrkdwn_to_html("*bold* _it_ ~no~") == "<b>bold</b> <i>it</i> <s>no</s>"
    assert render.mrkdwn_to_html("```\nx = *1*\n```") == "<pre>x = *1*</pre>"
    assert render.mrkdwn_to_html("<https://a.example/x|label>") == '<a href="https://a.example/x">label</a>'
    assert render.mrkdwn_to_html(":warning: a_b_c") == "⚠️ a_b_c"


def test_an_unknown_block_type_is_refused_not_dropped():
    with pytest.raises(ValueError, match="image"):
        render.blocks_to_html([{"type": "image", "image_url": "x"}])


def test_bad_link_argument_is_a_usage_error(tmp_path, capsys):
    assert render.main(["--home", str(tmp_path), "--link", "flask"]) == 2
    assert "--link takes NAME=TEMPLATE" in capsys.readouterr().err
