"""What a question may be: at most :data:`MAX_QUESTION_CHARS` characters, valid Unicode.

Every entry point (Slack, Teams, the CLI and :meth:`bot.answer.service.AnswerService.ask`
itself) passes the question through :func:`check_question` before anything else, so an
over-long question is refused with a clear message before retrieval, before the model
and before the query log (nothing of it is stored).

Lone UTF-16 surrogates (``"\\ud800"``, which JSON allows as an escape) cannot be encoded
as UTF-8, so the embedder, Weaviate and the database would all fail on them; they are
replaced by U+FFFD (the replacement character) instead of failing the question.
"""
from __future__ import annotations

import re

from common.errors import BadInput

# 4,000 characters: about a page of text or a ~100-line stack trace, far beyond any real
# question (the dev set's longest is under 200), and ~1,100 tokens, a small share of the
# prompt, so the sources are never dropped to make room for the question.
MAX_QUESTION_CHARS = 4000
_SURROGATE = re.compile("[\ud800-\udfff]")


class QuestionTooLong(BadInput):
    """A question over :data:`MAX_QUESTION_CHARS` characters (``str()`` is the reply shown)."""


def clean_question(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (always UTF-8 encodable)."""
    return _SURROGATE.sub("\ufffd", text or "")


def too_long_message(length: int) -> str:
    """The reply to a question of ``length`` characters over the cap."""
    return (f"That question is {length:,} characters long; I can take at most {MAX_QUESTION_CHARS:,} "
            "characters. Please shorten it (quote just the relevant lines of a log or trace).")


def check_question(text: str) -> str:
    """The question to answer: ``text`` cleaned (:func:`clean_question`). Raises
    :class:`QuestionTooLong` when it is over :data:`MAX_QUESTION_CHARS` characters."""
    text = clean_question(text)
    if len(text) > MAX_QUESTION_CHARS:
        raise QuestionTooLong(too_long_message(len(text)))
    return text
