"""``coderag serve``, wired in one place: per role (``bot``, ``indexer``, ``all``), build
the store, database, embedder, answer service, freshness runtime and front ends ONCE,
as typed objects, then the ASGI app (:func:`bot.server.build_asgi`) over them.

| role | answer service, Slack, Teams | webhooks, freshness runtime, scheduler |
|---|---|---|
| ``bot`` | yes | no (query-log retention on an in-memory scheduler) |
| ``indexer`` | no | yes |
| ``all`` | yes | yes |

:func:`plan` decides what runs from the settings alone (``BadInput`` when nothing is
configured); :func:`build` opens what the plan needs; :meth:`ServeProcess.run` serves
until interrupted and closes everything.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from common.db import open_database
from common.errors import BadInput
from common.settings import AppSettings, FreshnessSettings, Settings, SlackSettings, install, load
from indexer import ChunkStore, FreshnessRuntime, make_embedder
from indexer.read import Embedder

from .answer.service import AnswerService
from .server import ServerContext, build_asgi

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServePlan:
    """What one ``coderag serve`` process runs (decided before anything is opened)."""

    role: str
    slack: SlackSettings | None      # the Slack group when Slack is served
    teams: bool
    freshness: FreshnessSettings | None  # the environment's freshness group (indexer and all roles)
    scheduler: bool                  # CODERAG_SCHEDULER
    retention_days: int | None       # CODERAG_RETENTION_DAYS
    mcp: bool = False                # CODERAG_MCP_TOKENS: the MCP HTTP transport at /mcp

    @property
    def answers(self) -> bool:
        """True when this process answers questions (an answer service is built)."""
        return self.slack is not None or self.teams or self.mcp


def plan(settings: AppSettings | None = None) -> ServePlan:
    """Decide what runs from ``settings`` (the CLI's, read once at start-up; ``None``:
    read now). Raises ``BadInput`` when nothing would be served, when the Slack tokens
    the mode needs are missing, or on a malformed setting."""
    from .mcp_server import McpAccess
    from .teams.routes import teams_enabled

    settings = settings if settings is not None else load()
    process = settings.process
    role = process.role
    slack = settings.slack
    fresh = settings.freshness
    fresh.check()  # Confluence credentials
    # Teams (bot.teams): CODERAG_TEAMS_CLIENT_ID, or CODERAG_TEAMS=1 for anonymous local testing.
    use_teams = role != "indexer" and teams_enabled(settings.teams)
    use_mcp = role != "indexer" and bool(McpAccess.from_settings(settings.chat).tokens)
    keeps_fresh = role != "bot" and (fresh.webhooks_enabled or fresh.confluence is not None)
    # Slack is optional when another front end (Teams, webhooks, Confluence syncs) is configured.
    others = keeps_fresh or use_teams or use_mcp
    use_slack = role != "indexer" and (bool(slack.bot_token) or not others)
    if use_slack:
        if not slack.bot_token and not others:
            raise BadInput("nothing to serve: configure Slack (SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET or "
                           "SLACK_APP_TOKEN), Teams (CODERAG_TEAMS_CLIENT_ID, ...), MCP (CODERAG_MCP_TOKENS), or webhooks (CODERAG_REPOS and "
                           "CODERAG_GITHUB_WEBHOOK_SECRET or CODERAG_GITLAB_WEBHOOK_TOKEN), or Confluence "
                           "(CODERAG_CONFLUENCE_URL)")
        slack.check()
    # Sources added on the admin page are in the database: whether this process keeps any
    # fresh (and whether the indexer role has anything to serve) is decided by build(),
    # once the database is open (keeps_sources_fresh).
    return ServePlan(role=role, slack=slack if use_slack else None, teams=use_teams,
                     freshness=fresh if role != "bot" else None, scheduler=process.scheduler,
                     retention_days=settings.querylog.retention_days, mcp=use_mcp)


def keeps_sources_fresh(config) -> bool:
    """True when a freshness configuration has something to keep fresh: a repository or a
    Confluence space configured (in the environment or on the admin page), or a webhook
    secret (a push may name a repository added later)."""
    return bool(config.repos) or config.confluence is not None or bool(config.github_secret or config.gitlab_token)


@dataclass
class ServeProcess:
    """Everything one ``coderag serve`` process runs; built by :func:`build`."""

    plan: ServePlan
    host: str
    port: int
    settings: Settings
    sessions: Any
    store: ChunkStore
    embedder: Embedder
    service: AnswerService | None
    bolt_app: Any
    teams: Any
    freshness: FreshnessRuntime | None
    retention_scheduler: Any
    context: ServerContext
    asgi: Any
    metrics_server: Any = None

    def banner(self) -> str:
        """The one start-up line: which front ends, hooks and schedulers run, and where."""
        p = self.plan
        fresh = self.freshness.config if self.freshness is not None else None
        slack = ("off" if self.bolt_app is None else "Socket Mode" if p.slack.socket_mode
                 else f"HTTP on http://{self.host}:{self.port}/slack/events")
        teams = "off" if self.teams is None else (f"HTTP on http://{self.host}:{self.port}/api/messages"
                                                  + (" (ANONYMOUS: no token validation)"
                                                     if self.teams.auth.anonymous else ""))
        hooks = [path for path, on in (("/webhooks/github", fresh and fresh.github_secret),
                                       ("/webhooks/gitlab", fresh and fresh.gitlab_token)) if on]
        sched = ("on" if self.freshness is not None and self.freshness.scheduler is not None
                 else "retention only" if self.retention_scheduler is not None else "off")
        retention = f"{p.retention_days} days" if p.retention_days and sched != "off" else "off"
        st = self.settings
        metrics = (f"http://{st.metrics_host}:{st.metrics_port}/metrics" + (" (bearer token)" if st.metrics_token else "")
                   if st.metrics_port else "off")
        mcp = f"HTTP on http://{self.host}:{self.port}/mcp (bearer tokens)" if p.mcp else "off"
        return (f"coderag serve ({p.role}): Slack {slack}; Teams {teams}; MCP {mcp}; webhooks {', '.join(hooks) or 'off'}; "
                f"scheduler {sched}; query-log retention {retention}; /metrics {metrics}; "
                f"admin {'http://' + self.host + ':' + str(self.port) + '/admin' if self.context.admin else 'off'}")

    def run(self) -> None:
        """Serve until interrupted (uvicorn; plus the Socket Mode connection), then close."""
        from .slack.server import serve as run_server

        from .health import start_metrics_listener

        self.metrics_server = start_metrics_listener(self.settings)  # /metrics never on the public port
        try:
            run_server(self.asgi, self.bolt_app, self.plan.slack if self.bolt_app is not None else None,
                       host=self.host, port=self.port)
        finally:
            self.close()

    def close(self) -> None:
        """Stop the metrics listener, the schedulers and workers, close the Weaviate connection."""
        if self.metrics_server is not None:
            self.metrics_server.stop()
            self.metrics_server = None
        if self.retention_scheduler is not None:
            self.retention_scheduler.shutdown(wait=False)
            self.retention_scheduler = None
        if self.freshness is not None:
            self.freshness.stop()
            self.freshness = None
        self.store.close()
        install(None)


def seed_runconfig(app: AppSettings, sessions):
    """The run-time configuration (:class:`bot.runconfig.store.RunConfig`) on ``sessions``,
    brought in line with what the environment in ``app`` says (sources, channel policies,
    the review channel): the admin page changes it, the chat front ends read it."""
    from .runconfig.store import RunConfig, Seed

    runconfig = RunConfig(sessions)
    runconfig.seed(Seed.from_settings(app, review_channel=app.admin.review_channel))
    return runconfig


def build(the_plan: ServePlan, *, host: str = "127.0.0.1", port: int = 3000,
          settings: AppSettings | None = None) -> ServeProcess:
    """Open the database and Weaviate, load the embedder once, and build what
    ``the_plan`` runs, every part handed its group of ``settings`` (the CLI's, read once
    at start-up; ``None``: read now; installed for the scheduler's job bodies). Starts
    the scheduler (``SchedulerAlreadyRunning`` when another process holds its lock).
    Raises ``BadInput`` in the indexer role when neither the environment nor the database
    configures anything to keep fresh. Closes what it opened when a step fails."""
    from . import metrics

    app = install(settings if settings is not None else load())
    settings = app.core
    sessions = open_database(settings)
    runconfig = seed_runconfig(app, sessions)  # sources, channel policies: the database, seeded
    fresh = None
    if the_plan.freshness is not None:
        from .runconfig.live import LiveFreshness

        # the sources kept fresh are read from the database whenever they are needed: one
        # added on the admin page is synced by the next push or scheduled run, no restart
        fresh = LiveFreshness(runconfig, the_plan.freshness)
        if not keeps_sources_fresh(fresh):
            if the_plan.role == "indexer":
                raise BadInput("nothing to serve in the indexer role: no repository or Confluence space is "
                               "configured (CODERAG_REPOS, CODERAG_CONFLUENCE_URL, or the admin page's Sources) "
                               "and no webhook secret (CODERAG_GITHUB_WEBHOOK_SECRET or CODERAG_GITLAB_WEBHOOK_TOKEN)")
            fresh = None
    store = ChunkStore.open(settings)
    runtime: FreshnessRuntime | None = None
    retention = None
    try:
        embedder = make_embedder(settings)
        service = AnswerService(store, embedder, sessions=sessions, settings=app) if the_plan.answers else None
        bolt_app = teams = None
        if the_plan.slack is not None or the_plan.teams:  # the chat front ends' allow-list and query log
            from .querylog.recorder import QueryLog
            from .runconfig.policy import RuntimePolicy

            # the allow-list and reply modes are read from the database at each question
            policy, querylog = RuntimePolicy(sessions), QueryLog(sessions, settings=app.querylog)
        if the_plan.slack is not None or the_plan.teams:
            from .runconfig.drafts import ReviewDesk
        if the_plan.slack is not None:
            from .slack.app import build_app

            bolt_app = build_app(service, the_plan.slack, chat=app.chat, sessions=sessions, querylog=querylog,
                                 policy=policy, review=ReviewDesk(sessions, public_url=app.admin.public_url))
        if the_plan.teams:
            from .teams.auth import TeamsAuth
            from .teams.routes import build_teams

            # drafts of Teams "draft for review" channels are announced in the (Slack) review
            # channel when Slack is served here; else they wait on the admin page
            notify = ((lambda to, text: bolt_app.client.chat_postMessage(channel=to, text=text))
                      if bolt_app is not None else None)
            teams = build_teams(service, app.teams, chat=app.chat,  # warns when anonymous
                                auth=TeamsAuth.from_settings(app.teams), querylog=querylog, policy=policy,
                                review=ReviewDesk(sessions, public_url=app.admin.public_url, post=notify))
        if fresh is not None:
            runtime = FreshnessRuntime.build(fresh, settings, sessions=sessions, embedder=embedder, store=store)
            runtime.make_current()
            metrics.watch_webhook_queue(runtime.workers.pending)  # the index queue's depth: an autoscaler's signal
            metrics.watch_index_jobs(runtime.workers.counts)
        ctx = ServerContext(app_settings=app, service=service, sessions=sessions, settings=settings, store=store,
                            slack_app=bolt_app, socket_mode=bolt_app is not None and the_plan.slack.socket_mode,
                            teams=teams, freshness=runtime, role=the_plan.role, mcp=the_plan.mcp)
        asgi = build_asgi(ctx)
        if runtime is not None and the_plan.scheduler:
            from .querylog.retention import retention_job_provider

            from .knowledge import digest_job_provider  # weekly drift digest

            runtime.start_scheduler(extra_jobs=[retention_job_provider(the_plan.retention_days),
                                                digest_job_provider(settings)])
        elif the_plan.retention_days and the_plan.scheduler:
            # No freshness scheduler here (no repos/spaces, or the bot role): prune from an
            # in-memory one (idempotent, so one per replica is harmless).
            from apscheduler.schedulers.background import BackgroundScheduler

            from .querylog.retention import schedule_retention

            retention = BackgroundScheduler(timezone="UTC")
            schedule_retention(retention, sessions, the_plan.retention_days)
            retention.start()
    except BaseException:
        if runtime is not None:
            runtime.stop()  # its workers, before the error
        store.close()
        raise
    return ServeProcess(plan=the_plan, host=host, port=port, settings=settings, sessions=sessions, store=store,
                        embedder=embedder, service=service, bolt_app=bolt_app, teams=teams, freshness=runtime,
                        retention_scheduler=retention, context=ctx, asgi=asgi)
