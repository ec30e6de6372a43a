#!/usr/bin/env python3
"""Picture of a real Slack answer for the manual: the product's own Block Kit, rendered.

Usage:
    python scripts/render_blocks.py --home DIR [--index PATH --name NAME] \
        [--question "..."] [--link NAME=TEMPLATE] [--out docs/img/slack-answer.png]

Asks ``--question`` of the index in ``--home`` (a ``CODERAG_HOME``; ``--index PATH``
first indexes that Git checkout under ``--name``, which re-uses every unchanged vector
when run again) through the same :class:`bot.answer.service.AnswerService` the bot uses,
turns the answer into Block Kit with :func:`bot.slack.blocks.answer_messages` (what
``coderag serve`` posts to Slack), writes the blocks as JSON beside the picture
(``.blocks.json``: paste it into Slack's Block Kit Builder to compare), renders them as
HTML in Slack's layout (sections, divider, context lines, buttons; mrkdwn bold, italics,
code, code blocks, links) and screenshots that page with headless Chromium
(``chromium`` on PATH, or ``--chromium``). Without ``ANTHROPIC_API_KEY`` the answer is
the keyless one built from the code; with it, Claude's.

Re-run it after a change to the answer format to refresh the picture in the docs:
the manual's "Slack and Teams" page shows ``docs/img/slack-answer.png``.
Exit status: 0 on success, 2 on bad arguments, 1 when indexing, answering or the
screenshot fails (with one line saying which).
"""
from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_QUESTION = "What does Flask do when a view raises an exception?"
DEFAULT_LINK = "flask=https://github.com/pallets/flask/blob/{commit}/{path}#L{start}-L{end}"
EMOJI = {":warning:": "⚠️", ":eyes:": "👀", ":mag:": "🔍", ":white_check_mark:": "✅", ":x:": "❌"}

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
body {{ margin: 0; background: #fff; font: 15px/1.47 -apple-system, "Segoe UI", "Noto Sans", "DejaVu Sans", Helvetica, Arial, sans-serif; color: #1d1c1d; }}
.wrap {{ width: 760px; padding: 16px 20px 20px; }}
.msg {{ display: flex; gap: 8px; padding: 8px 0; }}
.avatar {{ width: 36px; height: 36px; border-radius: 6px; flex: none; color: #fff; font-weight: 700;
           display: flex; align-items: center; justify-content: center; }}
.who {{ font-weight: 900; }} .app {{ background: #e8e8e8; color: #616061; font-size: 10px; font-weight: 700;
           padding: 1px 3px; border-radius: 2px; margin-left: 4px; vertical-align: 2px; }}
.time {{ color: #616061; font-size: 12px; margin-left: 6px; }}
.body {{ flex: 1; min-width: 0; }} .section {{ margin: 2px 0 6px; white-space: pre-wrap; word-wrap: break-word; }}
.context {{ color: #616061; font-size: 13px; margin: 4px 0; white-space: pre-wrap; }}
hr {{ border: 0; border-top: 1px solid #e2e2e2; margin: 10px 0; }}
code {{ font: 12px Menlo, Consolas, "DejaVu Sans Mono", monospace; color: #e01e5a; background: #f6f6f6;
        border: 1px solid #e2e2e2; border-radius: 3px; padding: 1px 3px; }}
pre {{ font: 12px/1.5 Menlo, Consolas, "DejaVu Sans Mono", monospace; background: #f8f8f8; border: 1px solid #e2e2e2;
       border-radius: 4px; padding: 8px; margin: 4px 0; white-space: pre-wrap; }}
a {{ color: #1264a3; text-decoration: none; }}
.actions button {{ font: 700 13px inherit; background: #fff; border: 1px solid #bbb; border-radius: 4px;
                  padding: 4px 12px; margin: 6px 8px 0 0; }}
.thread {{ color: #616061; font-size: 13px; border-top: 1px solid #e2e2e2; margin: 4px 0 0 44px; padding-top: 6px; }}
</style></head><body><div class="wrap">{messages}</div></body></html>"""


def mrkdwn_to_html(text: str) -> str:
    """Slack mrkdwn (already ``&``/``<``/``>``-escaped by the renderer) as HTML.

    Handles what the answer blocks use: fenced code blocks, inline code, ``<url|label>``
    links, ``*bold*``, ``_italic_``, ``~strike~``, ``>`` quotes and ``:emoji:`` names.
    """
    parts = re.split(r"```(.*?)```", text, flags=re.S)
    out = []
    for i, part in enumerate(parts):
        if i % 2:  # inside a code fence: literal text
            out.append(f"<pre>{part.strip(chr(10))}</pre>")
            continue
        pieces = re.split(r"(`[^`\n]+`)", part)
        for j, piece in enumerate(pieces):
            if j % 2:
                out.append(f"<code>{piece[1:-1]}</code>")
                continue
            piece = re.sub(r"<([^<>|]+)\|([^<>]+)>", r'<a href="\1">\2</a>', piece)
            piece = re.sub(r"<(https?://[^<>|]+)>", r'<a href="\1">\1</a>', piece)
            piece = re.sub(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])", r"<b>\1</b>", piece)
            piece = re.sub(r"(?<![\w_])_([^_\n]+)_(?![\w_])", r"<i>\1</i>", piece)
            piece = re.sub(r"(?<![\w~])~([^~\n]+)~(?![\w~])", r"<s>\1</s>", piece)
            piece = re.sub(r"(?m)^&gt; ?(.*)$", r'<span style="border-left:4px solid #ddd;padding-left:8px">\1</span>',
                           piece)
            for name, char in EMOJI.items():
                piece = piece.replace(name, char)
            out.append(piece)
    return "".join(out)


def blocks_to_html(blocks: list[dict]) -> str:
    """One message's blocks (section, divider, context, actions) as HTML."""
    out = []
    for b in blocks:
        kind = b.get("type")
        if kind == "section":
            out.append(f'<div class="section">{mrkdwn_to_html(b["text"]["text"])}</div>')
        elif kind == "divider":
            out.append("<hr>")
        elif kind == "context":
            text = " ".join(mrkdwn_to_html(e.get("text", "")) for e in b.get("elements", []))
            out.append(f'<div class="context">{text}</div>')
        elif kind == "actions":
            buttons = "".join(f"<button>{html.escape(e['text']['text'])}</button>" for e in b.get("elements", []))
            out.append(f'<div class="actions">{buttons}</div>')
        else:
            raise ValueError(f"block type {kind!r} has no HTML rendering here; add one")
    return "".join(out)


def message_html(who: str, colour: str, initial: str, inner: str, *, app: bool, time: str) -> str:
    """A Slack-like message row: avatar, name (with the APP badge for bots), time, body."""
    badge = '<span class="app">APP</span>' if app else ""
    return (f'<div class="msg"><div class="avatar" style="background:{colour}">{initial}</div><div class="body">'
            f'<div><span class="who">{html.escape(who)}</span>{badge}<span class="time">{time}</span></div>'
            f"{inner}</div></div>")


def page_html(question: str, messages: list[list[dict]]) -> str:
    """The question, then every message of the answer, as one HTML page."""
    rows = [message_html("Priya (product)", "#2eb67d", "P", f'<div class="section">{html.escape(question)}</div>',
                         app=False, time="10:02 AM"),
            '<div class="thread">reply in thread</div>']
    rows += [message_html("coderag", "#4a154b", "c", blocks_to_html(m), app=True, time="10:02 AM") for m in messages]
    return PAGE.format(messages="".join(rows))


def screenshot(html_path: Path, out: Path, chromium: str) -> None:
    """Headless Chromium screenshot of ``html_path``, cropped to the content (Pillow)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={profile}", "--force-device-scale-factor=1", "--window-size=800,2000",
                        f"--screenshot={out}", html_path.as_uri()],
                       check=True, capture_output=True, timeout=120)
    from PIL import Image, ImageChops

    img = Image.open(out).convert("RGB")
    box = ImageChops.difference(img, Image.new("RGB", img.size, (255, 255, 255))).getbbox()
    if box:
        img.crop((0, 0, img.width, min(img.height, box[3] + 16))).save(out, optimize=True)


def answer_blocks(question: str, templates: dict[str, str], top_k: int) -> list[list[dict]]:
    """Ask ``question`` through the bot's AnswerService; the Block Kit messages it posts."""
    import indexer
    from bot.answer.service import AnswerService
    from common.db import open_database
    from bot.slack import blocks as bk
    from common.settings import load

    app = load()  # read once, as `coderag` does
    settings = app.core
    with indexer.open_store(settings) as store:
        service = AnswerService(store, indexer.make_embedder(settings), top_k=top_k,
                                sessions=open_database(settings), settings=app)
        answer = service.ask(question)
    return bk.answer_messages(answer, templates=templates, channel="C0DOCS", query_ts="1700000000.000100",
                              now=datetime.now(timezone.utc))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--home", required=True, type=Path, help="CODERAG_HOME holding (or to hold) the index")
    ap.add_argument("--index", type=Path, help="a Git checkout to index first")
    ap.add_argument("--name", default="flask", help="repo name for --index (default flask)")
    ap.add_argument("--question", default=DEFAULT_QUESTION)
    ap.add_argument("--top-k", type=int, default=3, help="sources shown (default 3)")
    ap.add_argument("--link", action="append", default=None,
                    help=f"NAME=URL template for citation links, repeatable (default {DEFAULT_LINK})")
    ap.add_argument("--out", type=Path, default=ROOT / "docs/img/slack-answer.png")
    ap.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser") or "chromium")
    args = ap.parse_args(argv)
    templates = {}
    for item in args.link or [DEFAULT_LINK]:
        name, sep, template = item.partition("=")
        if not sep or not name or "{path}" not in template:
            print(f"render_blocks: error: --link takes NAME=TEMPLATE with {{path}}, got {item!r}", file=sys.stderr)
            return 2
        templates[name] = template
    os.environ["CODERAG_HOME"] = str(args.home)
    sys.path.insert(0, str(ROOT))
    if args.index:
        step = subprocess.run([sys.executable, "-m", "bot.cli", "index", str(args.index), "--name", args.name],
                              cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        if step.returncode:
            print(f"render_blocks: error: indexing {args.index} failed (exit {step.returncode})", file=sys.stderr)
            return 1
    try:
        messages = answer_blocks(args.question, templates, args.top_k)
    except Exception as exc:  # a one-line reason; the index or Weaviate is the usual cause
        print(f"render_blocks: error: answering failed: {exc}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".blocks.json").write_text(json.dumps({"question": args.question, "messages": messages},
                                                               indent=1, ensure_ascii=False) + "\n")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "answer.html"
        page.write_text(page_html(args.question, messages), encoding="utf-8")
        try:
            screenshot(page, args.out, args.chromium)
        except (OSError, subprocess.SubprocessError) as exc:
            print(f"render_blocks: error: the screenshot failed ({exc}); is Chromium installed?", file=sys.stderr)
            return 1
    print(f"{args.out} ({sum(len(m) for m in messages)} blocks in {len(messages)} message(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
