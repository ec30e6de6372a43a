"""What an operator changes while coderag runs, kept in the SQL database: the sources
(repositories and Confluence spaces), the channel policies (each channel's allow-list
and reply mode), a few run-time values (the review channel), every change to them
(who, when, what) and the drafts waiting for review.

The environment seeds it (``CODERAG_REPOS``, ``CODERAG_CONFLUENCE_SPACES``,
``CODERAG_CHANNEL_SOURCES``, ``CODERAG_ONBOARDING_CHANNELS``, ``CODERAG_REVIEW_CHANNEL``):
an entry the database has never held is copied in at start-up; from then on the
database is what the bot reads at question time and what the admin page changes.

Modules: ``models`` (tables, migrations ``0010_admin`` and ``0011_teams_channels``), ``store`` (:class:`RunConfig`:
seed, read, change, the change log), ``policy`` (:class:`RuntimePolicy`: the allow-list
and reply mode the chat front ends look up per question), ``drafts`` (the
draft-for-review reply mode), ``live`` (the sources a running process keeps fresh, read
when needed). Nothing here imports a chat SDK.
"""
