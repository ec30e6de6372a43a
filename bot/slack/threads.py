"""Thread context and the "does this look like a question?" heuristic.

Slack message text is mrkdwn: mentions are ``<@U123>``, links ``<https://x|label>``, and
``&``, ``<``, ``>`` arrive escaped. :func:`plain_text` undoes that before a question goes
to the answer service.
"""
from __future__ import annotations

import re
from typing import Iterable

from bot.answer.service import Turn

MAX_TURNS = 10
MAX_TURN_CHARS = 2000

_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
_LINK = re.compile(r"<((?:https?|mailto):[^>|]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#[A-Z0-9]+\|([^>]*)>")
_SPECIAL = re.compile(r"<!([a-z]+)(?:\|[^>]*)?>")

QUESTION_WORDS = frozenset("""how what where why when which who whom whose is are was were can could
do does did should would will shall has have any anyone anybody""".split())
REQUEST_PHRASES = ("help me", "explain", "i'm looking for", "im looking for", "i am looking for",
                   "looking for the", "i need to find", "i can't find", "i cant find", "i cannot find",
                   "is there a", "is there any", "tell me", "show me", "point me")
MIN_WORDS = 3


def mentions(text: str, user_id: str) -> bool:
    """True when ``text`` mentions ``user_id`` (``<@U123>``)."""
    return bool(user_id) and any(m.group(1) == user_id for m in _MENTION.finditer(text or ""))


def plain_text(text: str, strip_user: str | None = None) -> str:
    """Slack mrkdwn → plain text: drop the ``strip_user`` mention, keep link labels
    (or URLs), unescape ``&amp;``/``&lt;``/``&gt;``, collapse blank runs."""
    text = text or ""
    if strip_user:
        text = re.sub(rf"<@{re.escape(strip_user)}(?:\|[^>]*)?>", " ", text)
    text = _MENTION.sub(lambda m: f"@{m.group(1)}", text)
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    text = _CHANNEL.sub(lambda m: f"#{m.group(1)}", text)
    text = _SPECIAL.sub(lambda m: f"@{m.group(1)}", text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    text = re.sub(r"[ \t]+", " ", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def looks_like_question(text: str) -> bool:
    """The onboarding-channel heuristic: answer a top-level message only when it reads
    like a question, so chatter ("thanks!", "deploying now") is left alone.

    Rules, on the plain text without code blocks: at least ``MIN_WORDS`` words, and
    either a ``?`` ends a sentence, or the first word is an interrogative or auxiliary
    (how, what, where, why, which, who, is, are, can, does, should, anyone, ...), or it
    contains a request phrase ("help me", "explain", "I'm looking for", "is there a",
    "show me", ...).
    """
    body = re.sub(r"```.*?```", " ", text or "", flags=re.S)
    body = re.sub(r"`[^`]*`", " code ", body).strip()
    words = re.findall(r"[A-Za-z0-9_'’.-]+", body)
    if len(words) < MIN_WORDS:
        return False
    if re.search(r"\?(\s|$|[\"')\]])", body):
        return True
    first = words[0].lower().strip("'’.")
    if first in QUESTION_WORDS:
        return True
    low = body.lower().replace("’", "'")
    return any(p in low for p in REQUEST_PHRASES)


def is_from_bot(message: dict, bot_user_id: str | None, bot_id: str | None) -> bool:
    """True for messages this bot posted (by user id or bot id)."""
    return bool((bot_user_id and message.get("user") == bot_user_id)
                or (bot_id and message.get("bot_id") == bot_id))


def thread_turns(messages: Iterable[dict], *, current_ts: str, bot_user_id: str | None,
                 bot_id: str | None, max_turns: int = MAX_TURNS) -> list[Turn]:
    """Earlier messages of a thread (``conversations.replies``) as :class:`Turn` objects:
    the bot's messages are ``assistant``, the rest ``user``; the current message and
    anything after it are left out, and only the last ``max_turns`` kept."""
    turns: list[Turn] = []
    for m in messages:
        ts = m.get("ts", "")
        if ts == current_ts or (ts and current_ts and float(ts) > float(current_ts)):
            continue
        if m.get("subtype") not in (None, "thread_broadcast", "bot_message"):
            continue
        role = "assistant" if is_from_bot(m, bot_user_id, bot_id) else "user"
        if role == "user" and m.get("bot_id"):
            continue  # other bots' chatter is not context
        text = plain_text(m.get("text", ""), strip_user=bot_user_id)[:MAX_TURN_CHARS]
        if text:
            turns.append(Turn(role=role, text=text))
    return turns[-max_turns:]


def bot_in_thread(messages: Iterable[dict], bot_user_id: str | None, bot_id: str | None) -> bool:
    """True when the bot has posted in this thread (so follow-ups need no mention)."""
    return any(is_from_bot(m, bot_user_id, bot_id) for m in messages)
