"""The Slack front end: a slack-bolt app over :class:`bot.answer.service.AnswerService`.

Modules: ``config`` (settings from the environment), ``app`` (listeners), ``blocks``
(Block Kit rendering), ``commands`` (``/coderag``), ``threads`` (thread context and the
question heuristic), ``dedupe`` (event ids in SQL; answers and votes go to :mod:`bot.querylog`), ``server`` (HTTP and
Socket Mode runners), ``models`` (SQL tables). Importing this package stays cheap: it
does not import slack-bolt (Alembic imports ``bot.slack.models``).
"""
