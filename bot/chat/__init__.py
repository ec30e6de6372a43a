"""What the chat front ends (``bot.slack``, ``bot.teams``) share above the answer service:
the one chat turn every question goes through, over the typed ``AnswerPort``
(:mod:`.turn`), command parsing (:mod:`.commands`), citation links from ``CODERAG_REPO_URLS``
(:mod:`.links`) and format-neutral pieces of rendering (:mod:`.render`: freshness,
impact grouping, status rows, apologies). Nothing here imports slack-bolt or the
Microsoft 365 Agents SDK.
"""
