"""One description of cited lines: the answer's citations and the query log's cited
chunks (the admin page's questions) are the same lines of one file at one commit
(:class:`bot.answer.extractive.CitedLines`), labelled the same way."""
from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

from bot.answer.extractive import Citation as AnswerCitation
from bot.answer.extractive import CitedLines
from bot.querylog.browse import Citation as LoggedCitation

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_both_citations_are_the_one_cited_lines_type():
    assert issubclass(AnswerCitation, CitedLines) and issubclass(LoggedCitation, CitedLines)
    shared = [f.name for f in dataclasses.fields(CitedLines)]
    assert shared == ["repo", "path", "start_line", "end_line", "commit"]
    assert [f.name for f in dataclasses.fields(AnswerCitation)][:5] == shared
    # the query log adds no field of its own: it keeps exactly the lines an answer cited
    assert [f.name for f in dataclasses.fields(LoggedCitation)] == shared


def test_the_page_labels_a_logged_citation_as_the_answer_cited_it():
    answer = AnswerCitation("shop", "pricing/tax.py", 10, 19, SHA, "compute_tax", datetime.now(timezone.utc))
    logged = LoggedCitation("shop", "pricing/tax.py", 10, 19, SHA)
    assert answer.ref == logged.label == "shop/pricing/tax.py:10-19@0123456"
    assert answer.label == "pricing/tax.py:10-19@0123456"  # the answer's own short form is unchanged
