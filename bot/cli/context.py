"""The CLI's composition root for settings: :func:`bot.cli.main` validates every setting
once (:func:`common.settings.load`) and hands the :class:`~common.settings.AppSettings`
to the Typer app as the click context's ``obj``; a command takes it, or its group, from
:func:`app_settings`. Nothing below the CLI reads the environment for a setting.
"""
from __future__ import annotations

import click

from common.settings import AppSettings, FreshnessSettings, Settings, load


def app_settings() -> AppSettings:
    """The settings of this ``coderag`` run: the root context's ``obj`` (set by
    :func:`bot.cli.main`); when the app is invoked without it (a test's ``CliRunner``,
    ``python -c``), read once now (:func:`load`) and kept on the root context for the
    rest of the run. Raises ``BadInput`` naming a malformed variable."""
    ctx = click.get_current_context(silent=True)
    root = ctx.find_root() if ctx is not None else None
    if root is not None and isinstance(root.obj, AppSettings):
        return root.obj
    settings = load()
    if root is not None and root.obj is None:
        root.obj = settings
    return settings


def core_settings() -> Settings:
    """The storage and indexing group (:class:`~common.settings.Settings`) of this run."""
    return app_settings().core


def freshness_config() -> FreshnessSettings:
    """The repos and spaces kept fresh: this run's freshness group (with its Confluence
    group), with the repositories and spaces configured in the database (the admin
    page's; seeded from this run's environment first, as ``coderag serve`` seeds them).
    Raises ``BadInput`` when Confluence is configured without credentials."""
    app = app_settings()
    fresh = app.freshness
    fresh.check()
    from common.db import open_database  # sqlalchemy: loaded by the commands that use it

    from ..runconfig.store import RunConfig, Seed

    sessions = open_database(app.core)
    try:  # a short read: the engine is closed after it (left to the garbage collector, its
        # connection was a ResourceWarning at each `coderag status` or `sync`)
        runconfig = RunConfig(sessions)
        runconfig.seed(Seed.from_settings(app, review_channel=app.admin.review_channel))
        return runconfig.freshness(fresh)
    finally:
        sessions.kw["bind"].dispose()


def live_freshness_config():
    """:func:`freshness_config` for a process that runs on (``coderag worker``): the
    repositories and spaces are read from the database whenever they are needed
    (:class:`bot.runconfig.live.LiveFreshness`), so a source added on the admin page is
    indexed without a restart. Seeds the database from this run's environment first."""
    app = app_settings()
    app.freshness.check()
    from common.db import open_database

    from ..runconfig.live import LiveFreshness
    from ..runconfig.store import RunConfig, Seed

    runconfig = RunConfig(open_database(app.core))
    runconfig.seed(Seed.from_settings(app, review_channel=app.admin.review_channel))
    return LiveFreshness(runconfig, app.freshness)
