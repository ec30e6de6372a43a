"""The "draft for review" reply mode: in a channel whose reply mode is ``review`` (Slack or
Teams: :func:`bot.chat.turn.channel_turn`), the bot's answer is not posted to the
asker's thread but kept as a draft (:class:`DraftReplies` around the front end's own
replies); a reviewer approves it (it is posted as drafted, in the asker's thread), edits
it (the edited text is posted) or declines it (nothing is posted). Every decision is
written to the draft and to the change log, in one transaction.

The drafts live in ``review_drafts`` (:mod:`.models`); they are listed on the admin
page (``/admin/reviews``) and, when a review channel is set, announced there.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

from sqlalchemy import select, update
from sqlalchemy.orm import sessionmaker

from common.errors import BadInput

from .models import ReviewDraft
from .store import RunConfig

log = logging.getLogger(__name__)

#: ``post(channel, thread_ts, messages) -> ts of the first reply``: how a decision reaches the thread.
Poster = Callable[[str, str, list], "str | None"]


@dataclass(frozen=True)
class Draft:
    """A draft as the page shows it."""

    id: int
    ref: str
    created_at: datetime
    status: str
    surface: str
    channel: str
    thread_ts: str
    question: str
    answer: str
    messages: list
    reviewer: str | None = None
    decided_at: datetime | None = None
    final_text: str | None = None
    posted_ts: str | None = None
    #: where the approved answer goes besides the channel and thread (Teams: the conversation)
    target: dict | None = None


def _draft(r: ReviewDraft) -> Draft:
    try:
        messages = json.loads(r.messages)
    except ValueError:
        messages = []
    try:
        target = json.loads(r.target) if r.target else None
    except ValueError:
        target = None
    return Draft(id=r.id, ref=r.ref, created_at=r.created_at, status=r.status, surface=r.surface, channel=r.channel,
                 thread_ts=r.thread_ts, question=r.question, answer=r.answer, messages=messages, reviewer=r.reviewer,
                 decided_at=r.decided_at, final_text=r.final_text, posted_ts=r.posted_ts, target=target)


class DraftStore:
    """Drafts on a session factory; decisions are logged through :class:`RunConfig`."""

    def __init__(self, sessions: sessionmaker):
        self.sessions = sessions

    def create(self, *, ref: str, surface: str, channel: str, thread_ts: str, message_ts: str | None,
               question: str, answer: str, messages: list, target: dict | None = None) -> int:
        """Keep a new pending draft (``target``: where the approved answer goes besides
        ``channel`` and ``thread_ts``, e.g. a Teams conversation); returns its id."""
        row = ReviewDraft(ref=ref, created_at=datetime.now(timezone.utc), status="pending", surface=surface,
                          channel=channel, thread_ts=thread_ts, message_ts=message_ts, question=question,
                          answer=answer, messages=json.dumps(messages, ensure_ascii=False),
                          target=json.dumps(target, ensure_ascii=False) if target is not None else None)
        with self.sessions() as s, s.begin():
            s.add(row)
            s.flush()
            return row.id

    def get(self, draft_id: int) -> Draft | None:
        """One draft, or ``None``."""
        with self.sessions() as s:
            r = s.get(ReviewDraft, draft_id)
        return _draft(r) if r is not None else None

    def by_refs(self, refs: list[str]) -> dict[str, Draft]:
        """``{query-log ref: draft}`` for the answers among ``refs`` that were drafts."""
        if not refs:
            return {}
        with self.sessions() as s:
            return {r.ref: _draft(r) for r in s.scalars(select(ReviewDraft).where(ReviewDraft.ref.in_(refs)))}

    def list(self, status: str | None = "pending", limit: int = 100) -> list[Draft]:
        """Drafts with ``status`` (``None``: all), newest first."""
        stmt = select(ReviewDraft).order_by(ReviewDraft.created_at.desc(), ReviewDraft.id.desc()).limit(limit)
        if status:
            stmt = stmt.where(ReviewDraft.status == status)
        with self.sessions() as s:
            return [_draft(r) for r in s.scalars(stmt)]

    def decide(self, draft_id: int, decision: str, *, reviewer: str, post: Poster | None,
               text: str | None = None) -> Draft:
        """Approve (post the draft as it is), edit (post ``text``) or decline (post
        nothing) the pending draft ``draft_id``. The draft is claimed first, so two
        reviewers never post it twice; a failed post gives the draft back (pending) and
        re-raises. ``BadInput`` for an unknown or already decided draft, an unknown
        decision, an empty edit, or no way to post."""
        status = {"approve": "approved", "edit": "edited", "decline": "declined"}.get(decision)
        if status is None:
            raise BadInput(f"decision {decision!r}: approve, edit or decline")
        if status == "edited" and not (text or "").strip():
            raise BadInput("an edited answer needs its text")
        if status != "declined" and post is None:
            raise BadInput("no chat connection to post the answer with (its chat is not served by this process)")
        now = datetime.now(timezone.utc)
        with self.sessions() as s, s.begin():
            claimed = s.execute(update(ReviewDraft).where(ReviewDraft.id == draft_id, ReviewDraft.status == "pending")
                                .values(status=status, reviewer=reviewer[:200], decided_at=now,
                                        final_text=text if status == "edited" else None)).rowcount
        if not claimed:
            draft = self.get(draft_id)
            raise BadInput("no such draft" if draft is None else f"draft {draft_id} was already {draft.status}")
        draft = self.get(draft_id)
        posted = None
        try:
            if status == "approved":
                posted = post(draft.channel, draft.thread_ts, draft.messages)
            elif status == "edited":
                posted = post(draft.channel, draft.thread_ts, [[text, None]])
        except Exception:
            with self.sessions() as s, s.begin():
                s.execute(update(ReviewDraft).where(ReviewDraft.id == draft_id).values(
                    status="pending", reviewer=None, decided_at=None, final_text=None))
            raise
        with self.sessions() as s, s.begin():
            s.execute(update(ReviewDraft).where(ReviewDraft.id == draft_id).values(posted_ts=posted))
            RunConfig._log(s, reviewer, f"draft.{decision}", f"draft {draft_id}",
                           {"channel": draft.channel, "thread_ts": draft.thread_ts, "question": draft.question[:300],
                            "edited_text": text if status == "edited" else None, "posted_ts": posted})
        return self.get(draft_id)


#: What the asker is told in the thread once their answer waits for a reviewer.
DRAFTED = "⏳ I drafted an answer; a reviewer checks it before it is posted here."


class DraftReplies:
    """A turn's replies in a ``review`` channel (:class:`bot.chat.turn.Replies`): the
    busy indicator, refusals and apologies go to the asker as usual (``inner``); the
    answer is rendered as usual, then kept as a draft instead of being posted (as
    ``inner.draft_messages(rendered)`` when the front end has it, with
    ``inner.draft_target()``), and ``announce(draft_id, question)`` tells the reviewers
    (a failure there is logged); :meth:`tell_asker` tells the asker."""

    def __init__(self, inner: Any, drafts: DraftStore, *, channel: str, thread_ts: str, message_ts: str | None,
                 question: str, announce: Callable[[int, str], None] | None = None):
        self.inner, self.drafts = inner, drafts
        self.frontend = inner.frontend
        self.channel, self.thread_ts, self.message_ts, self.question = channel, thread_ts, message_ts, question
        self.announce = announce
        self._answer = None
        self._ref = ""
        self.draft_id: int | None = None

    def busy(self):
        """The front end's own busy indicator."""
        return self.inner.busy()

    def refuse(self, message: str) -> None:
        """Refusals go to the asker directly (nothing to review)."""
        self.inner.refuse(message)

    def apologise(self, exc: BaseException | None = None) -> None:
        """Apologies go to the asker directly."""
        self.inner.apologise(exc)

    def render(self, answer, ref: str):
        """The answer in the front end's markup, as it would be posted."""
        self._answer, self._ref = answer, ref
        return self.inner.render(answer, ref)

    def post(self, rendered) -> None:
        """Keep ``rendered`` as a pending draft, then announce it."""
        as_json = getattr(self.inner, "draft_messages", None)
        messages = as_json(rendered) if as_json is not None else [
            list(m) if isinstance(m, (list, tuple)) else m for m in rendered]
        target = getattr(self.inner, "draft_target", None)
        self.draft_id = self.drafts.create(
            ref=self._ref, surface=self.frontend, channel=self.channel, thread_ts=self.thread_ts,
            message_ts=self.message_ts, question=self.question,
            answer=getattr(self._answer, "text", "") or "", messages=messages,
            target=target() if target is not None else None)
        if self.announce is not None:
            try:
                self.announce(self.draft_id, self.question)
            except Exception as exc:  # noqa: BLE001 - the draft is kept; the page lists it
                log.warning("announcing draft %s failed: %s", self.draft_id, exc)

    def tell_asker(self) -> None:
        """Tell the asker, in their thread, that a reviewer checks the answer first."""
        self.inner.note(DRAFTED)


class ReviewDesk:
    """What a chat front end needs for ``review`` channels: the draft store, and the
    notice it posts in the review channel (a run-time value, a Slack channel) for each new
    draft, linking to the admin page at ``public_url`` (``CODERAG_PUBLIC_URL``; empty: the
    notice names the page's path, ``/admin/reviews``, without a link). ``post(channel,
    text)`` posts a notice (Slack's ``chat.postMessage``; ``None``: drafts are on the page
    only, unless :meth:`drafting` is given one)."""

    def __init__(self, sessions: sessionmaker, *, public_url: str = "",
                 post: Callable[[str, str], Any] | None = None):
        self.drafts = DraftStore(sessions)
        self.config = RunConfig(sessions)
        self.public_url = public_url.rstrip("/")
        self.post = post

    def notice(self, draft_id: int, channel: str, question: str, surface: str = "slack") -> str:
        """The review channel's text for a new draft (Slack mrkdwn, the question quoted)."""
        from ..chat.escape import inert

        # without CODERAG_PUBLIC_URL there is no address to link to: name the page's path
        where = (f"<{self.public_url}/admin/reviews#draft-{draft_id}|Review it>" if self.public_url else
                 f"Review it on coderag's admin page, `/admin/reviews` (draft {draft_id}).")
        asked = f"<#{channel}>" if surface == "slack" else f"{surface.capitalize()} (`{inert(channel, 'slack')}`)"
        return (f":memo: Draft answer {draft_id} waiting for review, asked in {asked}:\n"
                f">{inert(question[:500], 'slack')}\n{where}")

    def announcer(self, post: Callable[[str, str], Any], channel: str,
                  surface: str = "slack") -> Callable[[int, str], None]:
        """``announce(draft_id, question)`` for :class:`DraftReplies`: posts
        :meth:`notice` with ``post(review_channel, text)`` when a review channel is set."""

        def announce(draft_id: int, question: str) -> None:
            """Post the notice of draft ``draft_id`` in the review channel, if one is set."""
            target = self.config.value("review_channel")
            if target:
                post(target, self.notice(draft_id, channel, question, surface))

        return announce

    def drafting(self, replies: Any, question: Any, channel: str | None, *,
                 post: Callable[[str, str], Any] | None = None) -> DraftReplies:
        """The replies of one turn in the ``review`` channel ``channel`` (the
        ``drafts`` of :func:`bot.chat.turn.channel_turn`): ``replies`` (the front end's)
        keep the answer to ``question`` (a :class:`bot.chat.turn.Question`, its ``where``
        naming the thread and message) as a draft, announced with ``post`` (default: the
        desk's)."""
        where = question.where or {}
        post = post or self.post
        announce = self.announcer(post, channel or "", replies.frontend) if post is not None else None
        return DraftReplies(replies, self.drafts, channel=channel or str(where.get("channel") or ""),
                            thread_ts=str(where.get("thread_ts") or ""), message_ts=where.get("message_ts"),
                            question=question.text, announce=announce)
