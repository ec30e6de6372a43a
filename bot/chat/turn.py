"""One chat turn: the path every chat front end (Slack mentions, thread messages and
``/coderag ask``; Teams messages) takes from a question to a posted, recorded answer.

    check → ask → (metric and apology) → reference → render → post → observe → record

A front end describes *where* the answer goes with a :class:`Replies` (how its own markup
writes a refusal, an apology and an answer, and how it posts one) and hands the question
to :func:`chat_turn`; it never calls the answer service's ``ask`` itself. The service is
seen through :class:`AnswerPort`, the part of :class:`bot.answer.service.AnswerService`
the front ends use (test stand-ins implement the same signatures).

The channel's policy (:func:`channel_turn`): the sources the asking channel may read, and
in a "draft for review" channel the answer kept as a draft for a reviewer, the same on
every front end.

One error policy for every front end (:func:`guarded`, in the manner of a single
listener error handler):

* a question over the length limit is refused with a notice; it is not asked, not logged;
* ``ask`` failing: counted (:func:`bot.metrics.observe_failure`), logged with its
  traceback, and the apology posted (a ``CoderagError``'s message is shown, others not);
* rendering or posting failing: logged and apologised for;
* the apology failing too: logged, never raised (a listener must not die on it).
"""
from __future__ import annotations

import logging
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Collection, Generic, Protocol, Sequence, TypeVar, runtime_checkable

from bot import metrics
from bot.answer.question import MAX_QUESTION_CHARS, QuestionTooLong, check_question
from bot.answer.service import Answer, Turn
from bot.querylog.recorder import QueryLog, new_ref, record_posted

log = logging.getLogger(__name__)

R = TypeVar("R")


@runtime_checkable
class AnswerPort(Protocol):
    """What a chat front end asks of the answer service (``AnswerService`` implements it).

    ``allowed`` is always passed: the sources the asking channel may read
    (:mod:`bot.tenancy`; ``None`` = every source).
    """

    def ask(self, question: str, *, history: Sequence[Turn] = (),
            allowed: Collection[str] | None = None) -> Answer:
        """The answer to ``question`` (``history``: earlier turns of the thread). Raises
        ``QuestionTooLong`` for an overlong question and a ``CoderagError`` (user-facing
        message) or any other exception when answering fails."""
        ...

    def status(self, allowed: Collection[str] | None = None) -> list:
        """The indexed sources within ``allowed``."""
        ...

    def impact(self, symbol: str, *, allowed: Collection[str] | None = None, ref: str | None = None) -> dict:
        """The callers of ``symbol`` within ``allowed``, at the named ref ``ref`` when given
        (``/coderag impact Cart.total --ref v2``); ``CoderagError`` for an unknown or
        ambiguous symbol or an unknown ref."""
        ...


class Replies(Protocol, Generic[R]):
    """Where one turn's replies go, in one front end's markup. ``frontend`` labels the
    metrics and is the query log's ``source`` (``"slack"``, ``"teams"``). ``R`` is the
    rendered answer (Block Kit messages, an Adaptive Card activity…)."""

    frontend: str

    def busy(self) -> AbstractContextManager:
        """Held while the question is answered (Slack: the eyes reaction; else nothing)."""
        ...

    def refuse(self, message: str) -> None:
        """Post ``message`` (why the question is not asked, e.g. it is too long)."""
        ...

    def apologise(self, exc: BaseException | None = None) -> None:
        """Post the apology for ``exc`` (may raise; :func:`guarded` catches it)."""
        ...

    def render(self, answer: Answer, ref: str) -> R:
        """``answer`` in the front end's markup; ``ref`` (the query log's reference)
        goes into the feedback buttons."""
        ...

    def post(self, rendered: R) -> None:
        """Post what :meth:`render` made."""
        ...

    # A front end whose channels may be in "draft for review" (:func:`channel_turn`) also
    # has ``note(text)`` (a plain message to the asker's thread), ``draft_messages(rendered)``
    # (the rendered answer as JSON, kept with the draft) and, when the channel and thread
    # are not enough to post the approved answer, ``draft_target()`` (JSON: where it goes).


@dataclass
class Question:
    """One question as a front end received it.

    ``text``: the question (mentions and markup already removed); ``allowed``: the
    asking channel's sources (``None`` = all); ``history``: earlier turns of the thread;
    ``where``: the query log's keys of the question (``workspace``, ``channel``,
    ``thread_ts``, ``message_ts``, ``user``: see
    :meth:`bot.querylog.recorder.QueryLog.record_answer`).
    """

    text: str
    allowed: Collection[str] | None = None
    history: Sequence[Turn] = ()
    where: dict[str, Any] = field(default_factory=dict)


@dataclass
class TurnResult:
    """What one turn did: ``answer`` and its query-log ``ref`` when it was posted;
    ``refused`` when the question was not asked; ``error`` when it failed (apologised)."""

    answer: Answer | None = None
    ref: str | None = None
    refused: bool = False
    error: BaseException | None = None


def guarded(replies: Replies, what: str, fn: Callable[[], Any]) -> Any:
    """Run ``fn()`` (one listener's work for ``replies``); on any exception log it as
    ``what`` failing and post the apology. Returns ``fn()``'s value, ``None`` after a
    failure. Never raises (an apology that fails too is only logged)."""
    try:
        return fn()
    except Exception as exc:
        log.exception("%s on %s failed", what, replies.frontend)
        apologise(replies, exc)
        return None


def apologise(replies: Replies, exc: BaseException | None = None) -> None:
    """``replies.apologise(exc)``; a failure to post it is logged, never raised."""
    try:
        replies.apologise(exc)
    except Exception:
        log.exception("could not even send the apology on %s", replies.frontend)


def chat_turn(port: AnswerPort, question: Question, replies: Replies,
              querylog: QueryLog | None = None) -> TurnResult:
    """Answer ``question`` through ``port`` and post it with ``replies``; then record it
    in ``querylog`` (source ``replies.frontend``, posting time as ``post_ms``).

    Steps: check the length (refused → :meth:`Replies.refuse`), ask (failure → metric,
    log, :meth:`Replies.apologise`), a new query-log reference, render, post, observe
    the answer in the metrics, record it. Never raises (see the module's error policy).
    """
    try:
        text = check_question(question.text)
    except QuestionTooLong as exc:  # not asked, not logged: only the reply
        log.info("question of %d characters on %s refused (limit %d)", len(question.text), replies.frontend,
                 MAX_QUESTION_CHARS)
        message = str(exc)
        guarded(replies, "refusing an overlong question", lambda: replies.refuse(message))
        return TurnResult(refused=True)
    with _holding(replies):
        try:
            answer = port.ask(text, history=list(question.history), allowed=question.allowed)
        except Exception as exc:
            metrics.observe_failure(exc, frontend=replies.frontend)
            log.exception("answering %r on %s failed (%s)", text[:200], replies.frontend,
                          question.where.get("channel", ""))
            apologise(replies, exc)
            return TurnResult(error=exc)
        ref = new_ref()
        try:
            rendered = replies.render(answer, ref)
            t_post = time.perf_counter()
            replies.post(rendered)
            post_s = time.perf_counter() - t_post
        except Exception as exc:
            log.exception("rendering or posting the answer to %r on %s failed", text[:200], replies.frontend)
            apologise(replies, exc)
            return TurnResult(answer=answer, ref=ref, error=exc)
        metrics.observe_answer(answer, frontend=replies.frontend, post_seconds=post_s)
        record_posted(querylog, answer, source=replies.frontend, ref=ref, post_ms=post_s * 1000, **question.where)
        return TurnResult(answer=answer, ref=ref)


#: ``drafts(replies, question, channel)``: the replies of a turn in a ``review`` channel
#: (:meth:`bot.runconfig.drafts.ReviewDesk.drafting`): the answer is kept as a draft for a
#: reviewer instead of being posted; their ``draft_id`` is set once it is kept, and
#: ``tell_asker()`` tells the asker that a reviewer checks it first.
Drafts = Callable[[Replies, Question, "str | None"], Any]


def reply_mode(policy: Any, channel: str | None) -> str:
    """The reply mode of ``channel`` (``mention``, ``questions``, ``review``) in the
    run-time ``policy`` (:class:`bot.runconfig.policy.RuntimePolicy`); ``mention`` for a
    policy without reply modes (:class:`bot.tenancy.ChannelPolicy`) or none."""
    mode = getattr(policy, "reply_mode", None)
    return mode(channel) if callable(mode) else "mention"


def channel_turn(port: AnswerPort, question: Question, replies: Replies, querylog: QueryLog | None = None, *,
                 policy: Any = None, channel: str | None = None, drafts: Drafts | None = None) -> TurnResult:
    """:func:`chat_turn` under the channel policy of ``channel`` (the id the policy is
    keyed by: a Slack or Teams channel id), the same for every front end: the question
    reads only the sources ``policy`` allows there, and in a ``review`` channel (with
    ``drafts``) the answer is kept as a draft for a reviewer instead of being posted, and
    the asker is told so in the thread. Never raises."""
    if policy is not None:
        question = replace(question, allowed=policy.allowed(channel))
    if drafts is None or reply_mode(policy, channel) != "review":
        return chat_turn(port, question, replies, querylog)
    drafting = drafts(replies, question, channel)
    result = chat_turn(port, question, drafting, querylog)
    if drafting.draft_id is not None:
        guarded(replies, "telling the asker that a reviewer checks the answer", drafting.tell_asker)
    return result


class _holding:
    """``replies.busy()`` entered and left without letting a failure of either escape."""

    def __init__(self, replies: Replies):
        self.replies = replies
        self.cm: AbstractContextManager = nullcontext()

    def __enter__(self):
        try:
            self.cm = self.replies.busy()
            self.cm.__enter__()
        except Exception as exc:  # cosmetic (a reaction, a typing indicator)
            log.warning("%s busy indicator failed: %s", self.replies.frontend, exc)
            self.cm = nullcontext()
        return self

    def __exit__(self, *exc_info):
        try:
            self.cm.__exit__(*exc_info)
        except Exception as exc:
            log.warning("%s busy indicator could not be removed: %s", self.replies.frontend, exc)
        return False
