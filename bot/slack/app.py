"""The Bolt app: listeners for mentions, thread follow-ups, DMs, onboarding channels,
``/coderag`` and the feedback buttons.

Every listener acks at once (Slack wants a 200 within 3 s); the work — retrieval and
answering through the one chat turn (:func:`bot.chat.turn.chat_turn`) — runs in Bolt *lazy*
listeners on a thread pool. The app uses ``process_before_response=True`` in both modes:
the (instant) ack function runs on the request's own thread and the HTTP / Socket Mode
response goes out right after it — never after the answer, and never queued behind
busy answer threads.

Thinking indicator: while an answer is being prepared the bot adds the ``eyes`` reaction
to the question message and removes it once the answer (or the apology) is posted.
Slash commands ack with a short ephemeral "Looking into it…" instead.

What gets answered:

* ``app_mention`` — always, in the thread of the mention (``thread_ts`` of the event, or
  its ``ts`` for a top-level message); earlier thread messages are passed as history.
* ``message`` in a thread where the bot has already posted — without a mention.
* ``message`` in a DM (``channel_type == "im"``) — always, also in a thread.
* top-level ``message`` in an onboarding channel (``CODERAG_ONBOARDING_CHANNELS``) — when
  :func:`bot.slack.threads.looks_like_question` says it reads like a question.

Ignored: messages from bots (any ``bot_id``) including our own, messages with a subtype
(edits, deletions, joins, ...; ``thread_broadcast`` is a user message and kept), and
channel messages that mention the bot (the ``app_mention`` event answers those).
Event deliveries are deduplicated by ``event_id`` before any listener runs.
"""
from __future__ import annotations

import json
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from functools import partial
from typing import Sequence

from slack_bolt import App, BoltResponse
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler
from sqlalchemy.orm import sessionmaker

from bot import metrics
from bot.answer.service import Turn
from bot.chat.turn import AnswerPort, Question, channel_turn, chat_turn, guarded
from bot.tenancy import ChannelPolicy
from common.errors import ChatUnavailable
from common.settings import ChatSettings, SlackSettings
from bot.querylog.recorder import QueryLog
from bot.runconfig.drafts import ReviewDesk

from . import blocks as bk
from . import commands
from .dedupe import EventLog
from .threads import bot_in_thread, looks_like_question, mentions, plain_text, thread_turns

log = logging.getLogger(__name__)

THINKING_REACTION = "eyes"
ALLOWED_SUBTYPES = (None, "thread_broadcast")
RATE_LIMIT_RETRIES = 3
EMPTY_QUESTION = ("Ask me a question about the code, e.g. _where is the retry backoff computed?_ "
                  "(`/coderag help` lists everything I can do).")


def make_client(settings: SlackSettings) -> WebClient:
    """A Web API client on ``SLACK_API_URL`` that waits out 429s (``Retry-After``)."""
    client = WebClient(token=settings.bot_token or None, base_url=settings.api_url, timeout=30)
    client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES))
    return client


class _SameTokenWarning(logging.Filter):
    """Drops Bolt's "As you gave `client` as well, `token` will be unused" (our client
    carries SLACK_BOT_TOKEN, the token Bolt read itself)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "will be unused" not in record.getMessage()


def _bolt_app(client: WebClient, settings: SlackSettings) -> App:
    """Bolt's app on ``client`` (its token, so Bolt is given no second one to warn about).
    Bolt checks the token with ``auth.test`` here: a refused token or an unreachable
    Slack is :class:`ChatUnavailable` (one line, exit 15), never a traceback."""
    from slack_bolt.error import BoltError
    from slack_sdk.errors import SlackApiError

    # Bolt also reads SLACK_BOT_TOKEN and warns that the client's wins: it is the same token
    logging.getLogger("slack_bolt.App").addFilter(_SameTokenWarning())
    try:
        return App(client=client, signing_secret=settings.signing_secret,
                   process_before_response=True,  # ack functions are instant; acks never wait on the pool
                   listener_executor=ThreadPoolExecutor(max_workers=settings.workers,
                                                        thread_name_prefix="coderag-slack"))
    except BoltError as exc:  # auth.test answered with an error (invalid_auth, account_inactive…)
        raise ChatUnavailable(f"Slack refused SLACK_BOT_TOKEN at start ({' '.join(str(exc).split())[:200]}); "
                              f"check the token and the app's installation") from None
    except SlackApiError as exc:
        error = (exc.response.get("error") if exc.response is not None else None) or "refused"
        raise ChatUnavailable(f"Slack refused SLACK_BOT_TOKEN at start ({error}); check the token "
                              f"and the app's installation") from None
    except OSError as exc:  # URLError, timeouts, refused connections
        reason = " ".join(str(getattr(exc, "reason", None) or exc).split())
        raise ChatUnavailable(f"cannot reach Slack at {settings.api_url} ({reason}); check the "
                              f"network or SLACK_API_URL") from None


class Responder:
    """Slack's side of a chat turn (:func:`bot.chat.turn.chat_turn`): thread history,
    and :class:`ThreadReplies` for a question asked in a thread. Slack API failures are
    logged and counted, never raised (:meth:`call`).

    Each answer is recorded in ``querylog`` (when given) after it is posted, with the
    posting time as the ``post`` stage; the feedback buttons carry the record's ``ref``.
    ``chat``: the chat group (citation links of the answers).
    """

    def __init__(self, service: AnswerPort, chat: ChatSettings, querylog: QueryLog | None = None,
                 policy: ChannelPolicy | None = None, review: ReviewDesk | None = None):
        self.service = service
        self.chat = chat
        self.querylog = querylog
        # The channel → sources allow-list (bot.tenancy): an answer in channel C is built
        # only from the sources C may read.
        self.policy = policy if policy is not None else ChannelPolicy()
        # "draft for review" channels (bot.runconfig.drafts): answers wait for a reviewer
        self.review = review

    def call(self, what: str, fn, **kwargs):
        """``fn(**kwargs)`` (a Web API method named ``what``); ``None`` when it failed."""
        try:
            return fn(**kwargs)
        except Exception as exc:  # Slack down or a bad request: log, keep going
            log.warning("Slack %s failed: %s", what, exc)
            metrics.record_error("slack_api")
            return None

    def history(self, client: WebClient, channel: str, thread_ts: str, current_ts: str,
                bot_user_id: str | None, bot_id: str | None) -> tuple[list[dict], list[Turn]]:
        """The thread's messages (``conversations.replies``) and the earlier turns."""
        resp = self.call("conversations.replies", client.conversations_replies,
                         channel=channel, ts=thread_ts, limit=100)
        messages = list((resp or {}).get("messages") or [])
        return messages, thread_turns(messages, current_ts=current_ts, bot_user_id=bot_user_id, bot_id=bot_id)

    def answer(self, client: WebClient, *, channel: str, ts: str, thread_ts: str, text: str,
               history: Sequence[Turn], bot_user_id: str | None, user: str | None = None,
               workspace: str | None = None) -> None:
        """Answer ``text`` (the message ``ts`` by ``user``) in ``thread_ts``, with the eyes
        reaction meanwhile, through the one chat turn; then record it in the query log."""
        replies = ThreadReplies(self, client, channel=channel, ts=ts, thread_ts=thread_ts)
        question = plain_text(text, strip_user=bot_user_id)
        if not question:
            replies.say(EMPTY_QUESTION)
            return
        drafts = None
        if self.review is not None:  # "draft for review" channels: notices go to the review channel from here
            def notify(to: str, text: str) -> None:
                self.call("chat.postMessage", client.chat_postMessage, channel=to, text=text)

            drafts = partial(self.review.drafting, post=notify)
        channel_turn(self.service, Question(question, history=history,
                                            where=dict(workspace=workspace, channel=channel, thread_ts=thread_ts,
                                                       message_ts=ts, user=user)),
                     replies, self.querylog, policy=self.policy, channel=channel, drafts=drafts)


def _posts(answer, messages: list[list[dict]]) -> list[tuple[str, list[dict]]]:
    """``(fallback text, blocks)`` per message of an answer: the first carries the answer's
    text (the model's prose when there is one), the others "(answer continued)"."""
    return [(bk.fallback_text(answer.prose or answer.text) if i == 0 else "(answer continued)", blocks)
            for i, blocks in enumerate(messages)]


class ThreadReplies:
    """A turn's replies in a Slack thread (:class:`bot.chat.turn.Replies`): posted with
    ``chat.postMessage``; the eyes reaction on the question while it is answered."""

    frontend = "slack"

    def __init__(self, responder: Responder, client: WebClient, *, channel: str, ts: str, thread_ts: str):
        self.responder, self.client = responder, client
        self.channel, self.ts, self.thread_ts = channel, ts, thread_ts

    def say(self, text: str, **extra) -> None:
        """Post ``text`` in the thread (a failure is logged, not raised)."""
        self.responder.call("chat.postMessage", self.client.chat_postMessage, channel=self.channel,
                            thread_ts=self.thread_ts, text=text, **extra)

    def note(self, text: str) -> None:
        """A plain message to the asker's thread (:meth:`say`)."""
        self.say(text)

    @contextmanager
    def busy(self):
        """The eyes reaction on the question meanwhile."""
        reacted = self.responder.call("reactions.add", self.client.reactions_add, channel=self.channel,
                                      timestamp=self.ts, name=THINKING_REACTION) is not None
        try:
            yield
        finally:
            if reacted:
                self.responder.call("reactions.remove", self.client.reactions_remove, channel=self.channel,
                                    timestamp=self.ts, name=THINKING_REACTION)

    def refuse(self, message: str) -> None:
        self.say(f":warning: {bk.escape(message)}")

    def apologise(self, exc: BaseException | None = None) -> None:
        self.say(bk.apology_text(exc))

    def render(self, answer, ref: str) -> list[tuple[str, list[dict]]]:
        return _posts(answer, bk.answer_messages(answer, templates=self.responder.chat.repo_urls,
                                                 channel=self.channel, query_ts=self.ts, query_ref=ref))

    def post(self, rendered: list[tuple[str, list[dict]]]) -> None:
        for text, blocks in rendered:
            self.say(text, blocks=blocks, unfurl_links=False, unfurl_media=False)


class CommandReplies:
    """A ``/coderag`` turn's replies (:class:`bot.chat.turn.Replies`): ephemeral, through
    ``respond``. The query key of a slash-command answer is filled in from the answer
    message's ts when a feedback button is clicked (see :func:`_feedback_key`); the query
    log's ref in the button links the vote to the query."""

    frontend = "slack"

    def __init__(self, respond, chat: ChatSettings, channel: str):
        self.respond, self.chat, self.channel = respond, chat, channel

    def busy(self):
        return nullcontext()  # the ack said "Looking into it…"

    def refuse(self, message: str) -> None:
        self.respond(text=f":warning: {bk.escape(message)}", response_type="ephemeral")

    def apologise(self, exc: BaseException | None = None) -> None:
        self.respond(text=bk.apology_text(exc), response_type="ephemeral")

    def render(self, answer, ref: str) -> list[tuple[str, list[dict]]]:
        return _posts(answer, bk.answer_messages(answer, templates=self.chat.repo_urls, channel=self.channel,
                                                 query_ts="", query_ref=ref))

    def post(self, rendered: list[tuple[str, list[dict]]]) -> None:
        for text, blocks in rendered:
            self.respond(text=text, blocks=blocks, response_type="ephemeral", replace_original=False)


def dedupe_key(body) -> str | None:
    """The id a delivery is deduplicated by: an Events API ``event_id``; ``cmd:`` + the
    ``trigger_id`` of a slash command; ``None`` for anything else (interactivity: a
    replayed vote only re-records the same vote)."""
    if not isinstance(body, dict):
        return None
    if body.get("type") == "event_callback" and body.get("event_id"):
        return str(body["event_id"])
    if body.get("command") and body.get("trigger_id"):
        return f"cmd:{body['trigger_id']}"[:100]  # slack_events.event_id is String(100)
    return None


def _feedback_key(body: dict, value: str) -> tuple[str, str, str]:
    """(channel, ts, query ref) of the query a feedback button belongs to (ref may be "")."""
    try:
        data = json.loads(value)
    except (TypeError, json.JSONDecodeError):
        data = {}
    container = body.get("container") or {}
    channel = data.get("channel") or (body.get("channel") or {}).get("id") or container.get("channel_id") or ""
    ts = data.get("ts") or container.get("message_ts") or (body.get("message") or {}).get("ts") or ""
    return channel, ts, str(data.get("q") or "")


def build_app(service: AnswerPort, settings: SlackSettings, *, chat: ChatSettings, sessions: sessionmaker,
              querylog: QueryLog, client: WebClient | None = None, policy: ChannelPolicy | None = None,
              review: ReviewDesk | None = None) -> App:
    """The Bolt app with every listener registered.

    ``settings`` and ``chat``: the Slack and chat groups read at start-up (tokens, API
    URL, onboarding channels, workers; citation links, staleness of ``/coderag status``).
    ``sessions`` is the SQL session factory (migrated to head; deliveries are
    deduplicated in it); ``querylog`` records every posted answer and vote; ``client``
    defaults to :func:`make_client`; ``policy`` is the channel allow-list
    (``CODERAG_CHANNEL_SOURCES`` read at start-up, applied to questions, ``/coderag
    status`` and ``impact``; default: no policy); with a run-time policy
    (:class:`bot.runconfig.policy.RuntimePolicy`) also each channel's reply mode, and
    ``review`` keeps the answers of "draft for review" channels as drafts
    (:mod:`bot.runconfig.drafts`). Building the app calls ``auth.test``
    once to learn the bot's own user id. Every question is answered through
    :func:`bot.chat.turn.chat_turn`.
    """
    events = EventLog(sessions)
    policy = policy if policy is not None else ChannelPolicy()
    responder = Responder(service, chat, querylog, policy, review)
    app = _bolt_app(client or make_client(settings), settings)

    @app.middleware
    def dedupe_events(body: dict, next, logger):  # noqa: A002  (Bolt's argument name)
        """Record each Events API ``event_id`` and each slash command's ``trigger_id`` (unique
        per invocation) on receipt; a redelivery or a replayed command (the same signed body
        sent again inside the 5-minute signature window) is acked and dropped."""
        event_id = dedupe_key(body)
        if event_id:
            try:
                first = events.first_delivery(event_id)
            except Exception:
                logger.exception("recording event %s failed; processing it anyway", event_id)
                first = True
            if not first:
                logger.info("duplicate delivery of %s ignored", event_id)
                return BoltResponse(status=200, body="")
        return next()

    def ack_now(ack):
        ack()

    def answers_questions(channel: str) -> bool:
        """Top-level questions are answered without a mention: the channel's reply mode
        is ``questions`` (a run-time policy), else it is an onboarding channel."""
        if callable(getattr(policy, "reply_mode", None)):
            return policy.reply_mode(channel) == "questions"
        return channel in settings.onboarding_channels

    def on_mention(event: dict, context, client: WebClient):
        if event.get("bot_id") or event.get("subtype") not in ALLOWED_SUBTYPES:
            return
        channel, ts = event["channel"], event["ts"]
        thread_ts = event.get("thread_ts") or ts
        history: list[Turn] = []
        if event.get("thread_ts"):
            _msgs, history = responder.history(client, channel, thread_ts, ts, context.bot_user_id, context.bot_id)
        responder.answer(client, channel=channel, ts=ts, thread_ts=thread_ts, text=event.get("text", ""),
                         history=history, bot_user_id=context.bot_user_id, user=event.get("user"),
                         workspace=event.get("team") or context.team_id)

    def on_message(event: dict, context, client: WebClient):
        if event.get("bot_id") or event.get("subtype") not in ALLOWED_SUBTYPES or not event.get("user"):
            return
        bot_user, bot_id = context.bot_user_id, context.bot_id
        if event.get("user") == bot_user:
            return
        channel, ts, text = event.get("channel", ""), event.get("ts", ""), event.get("text", "")
        is_dm = event.get("channel_type") == "im"
        if not is_dm and mentions(text, bot_user or ""):
            return  # app_mention answers it
        in_thread = bool(event.get("thread_ts")) and event.get("thread_ts") != ts
        thread_ts = event.get("thread_ts") or ts
        history: list[Turn] = []
        if in_thread:
            msgs, history = responder.history(client, channel, thread_ts, ts, bot_user, bot_id)
            if not is_dm and not bot_in_thread(msgs, bot_user, bot_id):
                return
        elif not is_dm:
            if not answers_questions(channel) or not looks_like_question(plain_text(text)):
                return
        responder.answer(client, channel=channel, ts=ts, thread_ts=thread_ts, text=text, history=history,
                         bot_user_id=bot_user, user=event.get("user"),
                         workspace=event.get("team") or context.team_id)

    app.event("app_mention")(ack=ack_now, lazy=[on_mention])
    app.event("message")(ack=ack_now, lazy=[on_message])

    # ------------------------------------------------------------------ /coderag
    def ack_command(ack, command: dict):
        cmd = commands.parse(command.get("text", ""))
        if not cmd.needs_work:
            ack(**commands.help_payload(cmd.error))
        elif cmd.name == "status":
            ack()
        else:
            ack(text=f":mag: Looking into it… (`/coderag {bk.escape(cmd.name)}`)", response_type="ephemeral")

    def run_command(command: dict, respond, context):
        cmd = commands.parse(command.get("text", ""))
        if not cmd.needs_work:
            return
        channel = command.get("channel_id", "")
        allowed = policy.allowed(channel)
        replies = CommandReplies(respond, chat, channel)

        def work() -> None:
            if cmd.name == "status":
                respond(**commands.run_status(service, chat.stale_hours, allowed=allowed))
            elif cmd.name == "impact":
                respond(**commands.run_impact(service, cmd.arg, chat.repo_urls, allowed=allowed))
            elif cmd.name in ("drift", "who"):  # runbook drift, who knows this (bot/knowledge.py)
                from bot.knowledge import chat_reply

                respond(text=chat_reply(service, cmd.name, cmd.arg, allowed=allowed, mention="slack"),
                        response_type="ephemeral")
            elif cmd.name == "changes":  # commits and changed functions in a window (bot/changes.py)
                from bot.changes import chat_changes

                respond(text=chat_changes(service, cmd.arg, allowed=allowed, target="slack"), response_type="ephemeral")
            else:
                chat_turn(service, Question(plain_text(cmd.arg, strip_user=context.bot_user_id), allowed=allowed,
                                            where=dict(workspace=command.get("team_id"), channel=channel,
                                                       user=command.get("user_id"))),
                          replies, querylog)

        guarded(replies, f"/coderag {cmd.name}", work)

    app.command("/coderag")(ack=ack_command, lazy=[run_command])

    # ------------------------------------------------------------------ feedback buttons
    def ack_feedback(ack, body: dict, action: dict, logger):
        ack()
        vote = 1 if action.get("action_id") == bk.FEEDBACK_UP else -1
        channel, ts, ref = _feedback_key(body, action.get("value", ""))
        user = (body.get("user") or {}).get("id", "")
        try:
            querylog.record_feedback(channel, ts, user, vote, query_ref=ref or None)
        except Exception:
            logger.exception("recording feedback failed")

    def thank_feedback(respond, action: dict, body: dict, client: WebClient):
        up = action.get("action_id") == bk.FEEDBACK_UP
        if not up and body.get("trigger_id"):  # 👎: ask why (the trigger id lives 3 s)
            channel, ts, ref = _feedback_key(body, action.get("value", ""))
            try:
                client.views_open(trigger_id=body["trigger_id"], view=bk.feedback_modal(channel, ts, ref))
                return
            except Exception as exc:  # noqa: BLE001 - the vote is recorded; just thank instead
                log.warning("could not open the feedback form: %s", exc)
        try:
            respond(text=f"Thanks for the feedback {'👍' if up else '👎'} — it is recorded.",
                    response_type="ephemeral", replace_original=False)
        except Exception as exc:
            log.warning("feedback acknowledgement failed: %s", exc)

    app.action(re.compile(f"^({bk.FEEDBACK_UP}|{bk.FEEDBACK_DOWN})$"))(ack=ack_feedback, lazy=[thank_feedback])

    def feedback_reason(ack, body: dict, view: dict, logger):
        """The 👎 form was sent: keep its reason and text as the vote's comment."""
        ack()
        key, comment = bk.feedback_comment(view)
        user = (body.get("user") or {}).get("id", "")
        if not key.get("channel") or not key.get("ts"):
            return
        try:
            querylog.record_feedback(key["channel"], key["ts"], user, -1, query_ref=key.get("q") or None,
                                     comment=comment)
        except Exception:
            logger.exception("recording the feedback comment failed")

    app.view(bk.FEEDBACK_MODAL)(feedback_reason)
    return app
