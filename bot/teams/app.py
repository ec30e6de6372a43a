"""The Teams agent: mentions in channels and group chats, personal chat, text commands
(``impact <symbol>``, ``status``, ``help``, ``ask <question>``) and 👍/👎 feedback.

Flow of a message activity (:meth:`TeamsBot.on_turn`): the bot's mention is removed
(:func:`question_text`), the text parsed as a command (:func:`bot.chat.commands.parse`);
``help`` and unparseable commands are answered at once in the turn. Work that needs the
index runs *after* the HTTP request is acknowledged (Teams gives a bot 15 s): a typing
indicator is sent, the request returns 202, and the answer — computed on a worker
thread by the shared :class:`~bot.answer.service.AnswerService` — is posted later as a
proactive reply through ``continue_conversation_with_claims`` with the incoming
identity. Replies go to the question's conversation (in a channel its id carries
``;messageid=<root>``, i.e. the thread) with ``replyToId`` = the question's activity id.

Feedback: a card button (``Action.Submit``) arrives as a message whose ``value`` is the
button data, an ``Action.Execute`` as an ``adaptiveCard/action`` invoke; both are stored
with :meth:`bot.querylog.recorder.QueryLog.record_feedback` in the same ``feedback``
table as Slack's votes.

Database keys: the query log's ``channel``/``message_ts``/``thread_ts`` columns hold at
most 40 characters; Teams ids longer than that are stored as ``t:`` + a SHA-256 prefix
(:func:`db_key`, stable, so stats still group by conversation).
"""
from __future__ import annotations

import asyncio
import hashlib
import html
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

from microsoft_agents.activity import Activity, ConversationReference
from microsoft_agents.hosting.core import ClaimsIdentity, JwtTokenValidator, TurnContext

from bot.chat.commands import parse
from bot.chat.render import apology_message, lookup_impact, lookup_status
from bot.chat.turn import AnswerPort, Question, channel_turn, guarded
from bot.querylog.recorder import QueryLog
from bot.runconfig.drafts import ReviewDesk
from bot.tenancy import ChannelPolicy
from common.settings import ChatSettings, TeamsSettings

from . import cards
from .auth import TeamsAuth

log = logging.getLogger(__name__)

INVOCATION = "@coderag"
KEY_LIMIT = 40
USER_LIMIT = 64
CARD_ACTION_INVOKE = "adaptiveCard/action"
EMPTY_QUESTION = "Ask me a question about the code, e.g. _where is the retry backoff computed?_ (`help` lists what I can do)."


# --------------------------------------------------------------------------- activity helpers

def db_key(value: str | None, limit: int = KEY_LIMIT) -> str:
    """``value`` when it fits ``limit`` characters, else ``t:`` + SHA-256 hex cut to ``limit``."""
    value = value or ""
    if len(value) <= limit:
        return value
    return ("t:" + hashlib.sha256(value.encode()).hexdigest())[:limit]


def _channel_data(activity: Activity) -> dict:
    data = activity.channel_data
    if data is None:
        return {}
    return data if isinstance(data, dict) else (data.model_dump(by_alias=True) if hasattr(data, "model_dump")
                                                else dict(getattr(data, "__dict__", {})))


def policy_channel(activity: Activity) -> str:
    """The id the channel allow-list (``CODERAG_CHANNEL_SOURCES``) is looked up with: the
    Teams channel id (``19:…@thread.tacv2``) for channel messages, else the conversation
    id without its ``;messageid=`` suffix (group and personal chats)."""
    channel = (_channel_data(activity).get("channel") or {}).get("id")
    return channel or (activity.conversation.id if activity.conversation else "").split(";")[0]


def thread_root(activity: Activity) -> str:
    """The thread's root message id (``;messageid=`` of the conversation id), else the activity id."""
    conv = activity.conversation.id if activity.conversation else ""
    m = re.search(r";messageid=([^;]+)", conv or "")
    return m.group(1) if m else (activity.id or "")


def user_id(activity: Activity) -> str:
    """The sender: Entra object id when Teams gives it, else the channel account id."""
    who = activity.from_property
    if who is None:
        return ""
    return who.aad_object_id or who.id or ""


def tenant_id(activity: Activity) -> str | None:
    """The Microsoft 365 tenant of the conversation (stored as the query's ``workspace``)."""
    conv = activity.conversation
    return (getattr(conv, "tenant_id", None) if conv else None) or (_channel_data(activity).get("tenant") or {}).get("id")


_AT = re.compile(r"<at[^>]*>.*?</at>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"</?(?:p|div|span|br|b|i|strong|em)\b[^>]*>", re.IGNORECASE)


def question_text(activity: Activity) -> str:
    """The message text without the bot's mention (and any other ``<at>…</at>`` mention
    markup, simple HTML tags and entities), trimmed."""
    text = activity.remove_recipient_mention() if activity.recipient else (activity.text or "")
    text = _TAGS.sub(" ", _AT.sub(" ", text or ""))
    return re.sub(r"[ \t\u00a0]+", " ", html.unescape(text)).strip()


def reply(text: str | None = None, card: dict | None = None) -> Activity:
    """A markdown message activity with an optional Adaptive Card attachment."""
    data: dict = {"type": "message", "textFormat": "markdown"}
    if text:
        data["text"] = text
    if card is not None:
        data["attachments"] = [cards.attachment(card)]
    return Activity.model_validate(data)


def feedback_vote(data) -> int | None:
    """``+1``/``-1`` from button data (``vote``: 1/-1, "1"/"-1", "up"/"down"), else None."""
    if not isinstance(data, dict) or data.get("action") != cards.FEEDBACK_ACTION:
        return None
    raw = str(data.get("vote", "")).strip().lower()
    return {"1": 1, "+1": 1, "up": 1, "-1": -1, "down": -1}.get(raw)


def _thanks(vote: int) -> str:
    return f"Thanks for the feedback {'👍' if vote > 0 else '👎'} — it is recorded."


# --------------------------------------------------------------------------- replies

class ActivityReplies:
    """A turn's replies in Teams (:class:`bot.chat.turn.Replies`), sent from a worker
    thread: each is posted as a proactive reply to the question (:meth:`TeamsBot._post`)
    on the event loop ``loop``, and waited for."""

    frontend = "teams"

    def __init__(self, bot: "TeamsBot", identity: ClaimsIdentity, audience: str | None,
                 reference: ConversationReference, loop: asyncio.AbstractEventLoop, *, conversation: str,
                 message: str):
        self.bot, self.identity, self.audience, self.reference, self.loop = bot, identity, audience, reference, loop
        self.conversation, self.message = conversation, message

    def send(self, out: Activity) -> None:
        """Post ``out`` (raises what posting raised)."""
        asyncio.run_coroutine_threadsafe(self.bot._post(self.identity, self.audience, self.reference, out),
                                         self.loop).result()

    def busy(self):
        return nullcontext()  # the typing indicator went out with the acknowledgement

    def refuse(self, message: str) -> None:
        self.send(reply(f"⚠️ {cards.safe(message)}"))

    def apologise(self, exc: BaseException | None = None) -> None:
        self.send(reply(f"⚠️ {cards.safe(apology_message(exc))}"))

    def render(self, answer, ref: str) -> Activity:
        return reply(card=cards.answer_card(answer, templates=self.bot.chat.repo_urls, ref=ref,
                                            conversation=self.conversation, message=self.message))

    def post(self, rendered: Activity) -> None:
        self.send(rendered)

    def note(self, text: str) -> None:
        """A plain message to the asker's thread."""
        self.send(reply(cards.safe(text)))

    def draft_messages(self, rendered: Activity) -> list[dict]:
        """The rendered answer as JSON, kept with a draft (:meth:`TeamsBot.post_draft` posts it)."""
        return [rendered.model_dump(by_alias=True, exclude_none=True, mode="json")]

    def draft_target(self) -> dict:
        """Where an approved draft goes: the question's conversation reference (service
        URL, conversation, bot, the question's activity id), without the asker."""
        target = self.reference.model_dump(by_alias=True, exclude_none=True, mode="json")
        target.pop("user", None)
        return target


# --------------------------------------------------------------------------- the agent

class TeamsBot:
    """The agent (``on_turn``) over one :class:`AnswerService` and one query log.

    ``settings`` and ``chat``: the Teams and chat groups read at start-up (workers;
    citation links, staleness of ``status``); ``adapter`` (set by
    :func:`bot.teams.routes.build_teams`) posts the delayed replies; ``policy`` is the
    channel allow-list (``CODERAG_CHANNEL_SOURCES`` read at start-up; default: no policy).
    """

    def __init__(self, service: AnswerPort, settings: TeamsSettings, querylog: QueryLog | None, *,
                 chat: ChatSettings, policy: ChannelPolicy | None = None, review: ReviewDesk | None = None):
        self.service = service
        self.settings = settings
        self.chat = chat
        self.querylog = querylog
        self.policy = policy if policy is not None else ChannelPolicy()
        # "draft for review" channels (bot.runconfig.drafts): answers wait for a reviewer
        self.review = review
        self.adapter = None
        self.auth = None  # the bot's TeamsAuth (set by build_teams): approved drafts are posted as it
        self.executor = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="coderag-teams")
        self._tasks: set[asyncio.Task] = set()

    # ---------------------------------------------------------------- dispatch
    async def on_turn(self, context: TurnContext) -> None:
        """Handle one incoming activity (other activity types are ignored)."""
        activity = context.activity
        if activity.type == "message":
            if feedback_vote(activity.value) is not None or (isinstance(activity.value, dict)
                                                             and activity.value.get("action")):
                await self._feedback_message(context, activity.value)
            elif (activity.from_property and (activity.from_property.role or "").lower() == "bot"):
                return
            else:
                await self._on_message(context)
        elif activity.type == "invoke" and activity.name == CARD_ACTION_INVOKE:
            await self._feedback_invoke(context)

    async def _run(self, fn, *args, **kwargs):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, lambda: fn(*args, **kwargs))

    async def _on_message(self, context: TurnContext) -> None:
        activity = context.activity
        text = question_text(activity)
        cmd = parse(text, INVOCATION)
        if not cmd.needs_work:
            await context.send_activity(reply(cards.help_text(cmd.error) if text else EMPTY_QUESTION))
            return
        try:
            await context.send_activity(Activity(type="typing"))
        except Exception as exc:  # the indicator is cosmetic
            log.warning("Teams typing indicator failed: %s", exc)
        reference = activity.get_conversation_reference()
        audience = context.turn_state.get(context.adapter.OAUTH_SCOPE_KEY)
        self._spawn(self._work(context.identity, audience, reference, activity, cmd))

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---------------------------------------------------------------- delayed work
    async def _work(self, identity: ClaimsIdentity, audience: str | None, reference: ConversationReference,
                    activity: Activity, cmd) -> None:
        """The work of ``cmd`` after the request was acknowledged: a question goes
        through the one chat turn under the channel's policy
        (:func:`bot.chat.turn.channel_turn`: its allow-list, and "draft for review") on a worker thread;
        ``status``, ``impact``, ``drift`` and ``who`` are looked up and posted. One error
        policy for all of it (:func:`bot.chat.turn.guarded`)."""
        allowed = self.policy.allowed(policy_channel(activity))
        conversation, message = db_key(activity.conversation.id), db_key(activity.id)
        replies = ActivityReplies(self, identity, audience, reference, asyncio.get_running_loop(),
                                  conversation=conversation, message=message)

        def work() -> None:
            if cmd.name == "status":
                found = lookup_status(self.service, allowed)
                replies.send(reply(f"⚠️ {cards.safe(found.message)}") if found.message else reply(
                    f"{len(found.value)} indexed source(s)",
                    cards.status_card(found.value, stale_hours=self.chat.stale_hours)))
            elif cmd.name in ("drift", "who"):  # runbook drift, who knows this (bot/knowledge.py)
                from bot.knowledge import chat_reply

                replies.send(reply(chat_reply(self.service, cmd.name, cmd.arg, allowed=allowed, target="teams")))
            elif cmd.name == "changes":  # commits and changed functions in a window (bot/changes.py)
                from bot.changes import chat_changes

                replies.send(reply(chat_changes(self.service, cmd.arg, allowed=allowed, target="teams")))
            elif cmd.name == "impact":
                found = lookup_impact(self.service, cmd.arg, allowed)
                replies.send(reply(f"⚠️ {cards.safe(found.message)}") if found.message else reply(
                    f"Impact of {cards.safe(cmd.arg)}: {len(found.value.get('callers') or [])} call site(s)",
                    cards.impact_card(found.value, self.chat.repo_urls)))
            else:  # a question: the channel's policy, "draft for review" included, as on Slack
                channel_turn(self.service, Question(cmd.arg, where=dict(
                    workspace=tenant_id(activity), channel=conversation, thread_ts=db_key(thread_root(activity)),
                    message_ts=message, user=db_key(user_id(activity), USER_LIMIT))), replies, self.querylog,
                    policy=self.policy, channel=policy_channel(activity),
                    drafts=self.review.drafting if self.review is not None else None)

        await self._run(guarded, replies, f"Teams {cmd.name} for conversation {conversation}", work)

    async def _post(self, identity: ClaimsIdentity, audience: str | None, reference: ConversationReference,
                    out: Activity) -> None:
        """Send ``out`` as a reply to the question (``replyToId`` = its id) in its conversation."""
        continuation = reference.get_continuation_activity()
        continuation.id = reference.activity_id  # the reply's replyToId (see TurnContext.send_activities)

        async def send(ctx: TurnContext) -> None:
            await ctx.send_activity(out)

        await self.adapter.continue_conversation_with_claims(identity, continuation, send, audience)

    async def post_draft(self, target: dict, messages: list) -> str | None:
        """Post an approved (or edited) draft in the asker's thread, as a reply to their
        question: ``target`` is the conversation reference kept with the draft
        (:meth:`ActivityReplies.draft_target`), ``messages`` the draft's activities as
        kept (or ``[text, None]`` pairs: a reviewer's edit). Posted as this bot (its
        Entra app; anonymous in local testing). Returns the id of the first reply."""
        reference = ConversationReference.model_validate(target)
        continuation = reference.get_continuation_activity()
        continuation.id = reference.activity_id  # the reply's replyToId
        outgoing = [reply(m[0]) if isinstance(m, (list, tuple)) else Activity.model_validate(m) for m in messages]
        sent: list[str] = []

        async def send(ctx: TurnContext) -> None:
            for out in outgoing:
                response = await ctx.send_activity(out)
                sent.append(getattr(response, "id", None) or "")

        auth = self.auth or TeamsAuth()
        if auth.anonymous:  # local testing: the identity an unauthenticated request has
            identity = JwtTokenValidator(auth.configuration()).get_anonymous_claims()
            await self.adapter.continue_conversation_with_claims(identity, continuation, send)
        else:
            await self.adapter.continue_conversation(auth.client_id, continuation, send)
        return db_key(next((i for i in sent if i), "")) or None

    # ---------------------------------------------------------------- feedback
    async def _store_feedback(self, activity: Activity, data) -> int | None:
        """Store the vote in ``data``; returns the vote or None when ``data`` is not a valid vote."""
        vote = feedback_vote(data)
        if vote is None or self.querylog is None:
            return vote
        conversation = str(data.get("conversation") or db_key(activity.conversation.id))[:KEY_LIMIT]
        message = str(data.get("message") or db_key(activity.reply_to_id))[:KEY_LIMIT]
        ref = str(data.get("ref") or "")[:32] or None
        await self._run(self.querylog.record_feedback, conversation, message,
                        db_key(user_id(activity), USER_LIMIT), vote, query_ref=ref)
        return vote

    async def _vote(self, activity: Activity, data) -> int | None:
        """:meth:`_store_feedback`, with a failure logged and treated as no valid vote (``None``)."""
        try:
            return await self._store_feedback(activity, data)
        except Exception:
            log.exception("recording Teams feedback failed")
            return None

    async def _feedback_message(self, context: TurnContext, data) -> None:
        vote = await self._vote(context.activity, data)
        if vote is None:
            log.info("ignored card submit without a valid feedback vote: %r", data)
            return
        await context.send_activity(reply(_thanks(vote)))

    async def _feedback_invoke(self, context: TurnContext) -> None:
        value = context.activity.value if isinstance(context.activity.value, dict) else {}
        action = value.get("action") if isinstance(value.get("action"), dict) else {}
        data = action.get("data")
        vote = await self._vote(context.activity, data)
        if vote is None:
            body = {"statusCode": 400, "type": "application/vnd.microsoft.error",
                    "value": {"code": "BadRequest", "message": "not a feedback action"}}
        else:
            body = {"statusCode": 200, "type": "application/vnd.microsoft.activity.message",
                    "value": _thanks(vote)}
        await context.send_activity(Activity(type="invokeResponse", value={"status": 200, "body": body}))
