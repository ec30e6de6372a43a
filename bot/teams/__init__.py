"""The Microsoft Teams front end on the Microsoft 365 Agents SDK for Python
(``microsoft-agents-hosting-core``; *not* the archived Bot Framework SDK).

Modules: ``auth`` (settings, MSAL connection, JWT validation), ``cards`` (Adaptive
Cards 1.5), ``app`` (the agent: mentions, personal chat, commands, feedback) and
``routes`` (``POST /api/messages`` for ``coderag serve``). Answers come from the same
:class:`bot.answer.service.AnswerService` as Slack and the CLI and are recorded in the
same query log (source ``teams``).
"""
