"""``/admin``: the web page for the people who run coderag, served by ``coderag serve``
(bot and all roles) when an admin sign-in is configured.

Server-rendered (Jinja2 templates in ``templates/``, no script), behind a sign-in: admin
tokens (one per admin in ``CODERAG_ADMIN_TOKENS``, or the shared ``CODERAG_ADMIN_TOKEN``) and, when ``SLACK_CLIENT_ID`` and
``SLACK_CLIENT_SECRET`` are set, "Sign in with Slack" (OpenID Connect) for the users in
``CODERAG_ADMIN_USERS``. Sessions are signed cookies (Starlette's, itsdangerous); every
form carries the session's CSRF token.

Modules: ``auth`` (sign-in, sessions, CSRF, the admin check), ``pages`` (the pages and
their forms), ``app`` (the routes, mounted by :func:`bot.server.admin_routes`).
See docs/operating/admin.md.
"""
