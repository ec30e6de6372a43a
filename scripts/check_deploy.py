#!/usr/bin/env python3
"""Render and validate the deployment files (CI: scripts/check_deploy.sh).

* compose: ``docker-compose config`` renders ``deploy/docker-compose.yml`` with
  ``deploy/.env.example`` as its ``.env`` (in a temporary copy: a real ``deploy/.env`` is never
  read or written), then :func:`compose_problems` checks what matters in the rendered file:
  every service has an image or a build, a healthcheck, Weaviate and PostgreSQL keep their data
  in named volumes, the coderag services wait for healthy dependencies, the worker service runs
  ``coderag worker`` with replicas only when the index queue is on, and no secret is written
  in the file itself (:func:`secret_problems`).
* helm: for the chart's default values and every ``deploy/helm/values/*.yaml``, ``helm lint
  --strict`` and ``helm template``, then ``kubeconform -strict`` against the Kubernetes JSON
  schemas shipped by the PyPI package ``kubernetes-validate`` (offline; no schema download), and
  :func:`chart_problems` (probes, the single indexer, no secret value in the default render).

Usage: ``python3 scripts/check_deploy.py [--compose] [--helm] [--deploy DIR]`` (both when
neither is given). Prints one line per check and one per problem; exit 1 when a check failed,
2 when a tool is missing (``scripts/install.sh --test`` installs them).
"""
from __future__ import annotations

import argparse
import atexit
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
# Kubernetes version the manifests are validated for: a release still supported by the large
# managed offerings at the time of writing; kubernetes-validate 1.37 ships schemas 1.25..1.37.
KUBERNETES_VERSION = "1.31.0"
SECRET_KEY = re.compile(r"(PASSWORD|SECRET|TOKEN|API_KEY|_PAT|SALT)$")
# Shapes of real credentials (Slack, Anthropic, GitHub, GitLab, PEM keys).
SECRET_VALUE = re.compile(r"xox[abpr]-[0-9]|xapp-[0-9]|sk-ant-[a-z0-9]|ghp_[A-Za-z0-9]|glpat-|-----BEGIN [A-Z ]*PRIVATE KEY")
PLACEHOLDERS = ("", "change-me")
COMPOSE_SERVICES = ("weaviate", "postgres", "coderag-bot", "coderag-indexer", "coderag-worker")


class ToolMissing(Exception):
    """A command-line tool (docker-compose, helm, kubeconform) is not installed."""


class CheckFailed(Exception):
    """A tool refused the input (its message is in the exception)."""


def tool(name: str) -> str:
    """Path of ``name``: PATH, then ``$(go env GOPATH)/bin`` (where ``go install`` puts it).

    Raises :class:`ToolMissing`.
    """
    found = shutil.which(name)
    if found:
        return found
    gopath = os.environ.get("GOPATH") or str(Path.home() / "go")
    cand = Path(gopath) / "bin" / name
    if cand.is_file() and os.access(cand, os.X_OK):
        return str(cand)
    raise ToolMissing(f"{name} not found on PATH or in {cand.parent} (run scripts/install.sh --test)")


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


# --- compose ------------------------------------------------------------------------------

def render_compose(deploy: Path) -> dict:
    """``docker-compose config`` of ``deploy/docker-compose.yml`` with ``.env.example`` as ``.env``.

    Works on a temporary copy of ``deploy`` (so ``env_file: [.env]`` resolves without touching a
    real ``deploy/.env``). Returns the rendered file as a dict. Raises :class:`CheckFailed` with
    docker-compose's message when it refuses the file, :class:`ToolMissing` without it.
    """
    exe = tool("docker-compose")
    with tempfile.TemporaryDirectory(prefix="coderag-compose-") as tmp:
        copy = Path(tmp) / "deploy"
        shutil.copytree(deploy, copy)
        shutil.copyfile(deploy / ".env.example", copy / ".env")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPOSE_", "DOCKER_"))}
        proc = _run([exe, "-f", str(copy / "docker-compose.yml"), "--env-file", str(copy / ".env"), "config"],
                    cwd=tmp, env=env)
        if proc.returncode != 0:
            raise CheckFailed(f"docker-compose config: {proc.stderr.strip() or proc.stdout.strip()}")
        rendered = yaml.safe_load(proc.stdout)
        # Paths in the output point into the temporary copy: make them relative to it.
        text = json.dumps(rendered).replace(tmp, "<root>")
        return json.loads(text)


def _named_volume_at(service: dict, volumes: dict, target: str) -> bool:
    for v in service.get("volumes") or []:
        if isinstance(v, str):
            parts = v.split(":")
            src, dst = parts[0], parts[1] if len(parts) > 1 else parts[0]
        else:
            src, dst = v.get("source", ""), v.get("target", "")
        if dst.rstrip("/") == target.rstrip("/") and src in volumes:
            return True
    return False


def compose_problems(rendered: dict, deploy: Path) -> list[str]:
    """What is wrong in a rendered compose file (empty list: nothing). ``deploy``: its folder."""
    out: list[str] = []
    services = rendered.get("services") or {}
    volumes = rendered.get("volumes") or {}
    for name in COMPOSE_SERVICES:
        if name not in services:
            out.append(f"compose: service {name} is missing")
    for name, svc in services.items():
        build = svc.get("build")
        if not svc.get("image") and not build:
            out.append(f"compose: service {name} has neither image nor build")
        if build:
            ctx = str(build.get("context", "")) if isinstance(build, dict) else str(build)
            dockerfile = build.get("dockerfile", "Dockerfile") if isinstance(build, dict) else "Dockerfile"
            path = Path(ctx.replace("<root>", str(deploy.parent))) / dockerfile
            if not path.is_file():
                out.append(f"compose: service {name} builds from {dockerfile}, which does not exist ({path})")
        test = (svc.get("healthcheck") or {}).get("test")
        if not test or (svc.get("healthcheck") or {}).get("disable"):
            out.append(f"compose: service {name} has no healthcheck")
    weaviate = services.get("weaviate") or {}
    data_path = (weaviate.get("environment") or {}).get("PERSISTENCE_DATA_PATH")
    if not data_path:
        out.append("compose: weaviate has no PERSISTENCE_DATA_PATH")
    elif not _named_volume_at(weaviate, volumes, data_path):
        out.append(f"compose: weaviate data ({data_path}) is not on a named volume")
    postgres = services.get("postgres") or {}
    pgdata = (postgres.get("environment") or {}).get("PGDATA") or "/var/lib/postgresql/data"
    if postgres and not _named_volume_at(postgres, volumes, pgdata):
        out.append(f"compose: postgres data ({pgdata}) is not on a named volume")
    out += _compose_worker_problems(services)
    for name in ("coderag-bot", "coderag-indexer", "coderag-worker"):
        deps = (services.get(name) or {}).get("depends_on") or {}
        for dep in ("weaviate", "postgres"):
            cond = deps.get(dep, {}).get("condition") if isinstance(deps, dict) else None
            if cond != "service_healthy":
                out.append(f"compose: {name} does not wait for {dep} to be healthy (condition: {cond})")
    return out


def _compose_worker_problems(services: dict) -> list[str]:
    """The index workers of a rendered compose file: ``coderag-worker`` runs ``coderag
    worker`` (the image's entrypoint is ``coderag``), and has replicas exactly when the
    index queue is on (``CODERAG_INDEX_QUEUE=procrastinate`` where the jobs are queued, the
    indexer, and in the worker itself): a queue nobody works on never indexes, workers
    without the queue refuse to start."""
    import shlex

    worker = services.get("coderag-worker")
    if not worker:
        return []  # reported as a missing service
    out: list[str] = []
    cmd = worker.get("command")
    cmd = shlex.split(cmd) if isinstance(cmd, str) else list(cmd or [])
    if worker.get("entrypoint") not in (None, ["coderag"], "coderag"):
        out.append(f"compose: coderag-worker replaces the image's entrypoint ({worker.get('entrypoint')!r})")
    if cmd[:1] != ["worker"]:
        out.append(f"compose: coderag-worker runs {' '.join(cmd) or 'the image default (serve)'}, not `coderag worker`")
    replicas = (worker.get("deploy") or {}).get("replicas", 1)
    replicas = int(replicas) if str(replicas).isdigit() else replicas

    def queue_of(name: str) -> str:
        env = (services.get(name) or {}).get("environment") or {}
        if isinstance(env, list):
            env = dict(e.split("=", 1) if "=" in e else (e, None) for e in env)
        return str(env.get("CODERAG_INDEX_QUEUE") or "threads")

    queue_on = queue_of("coderag-indexer") == "procrastinate"
    if queue_on and not replicas:
        out.append("compose: CODERAG_INDEX_QUEUE is procrastinate but no coderag-worker replica runs the jobs "
                   "(set CODERAG_WORKERS)")
    if replicas and not (queue_on and queue_of("coderag-worker") == "procrastinate"):
        out.append(f"compose: coderag-worker has {replicas} replica(s) without CODERAG_INDEX_QUEUE=procrastinate: "
                   "they would have no jobs (and refuse to start)")
    return out


def secret_problems(compose_text: str, env_example_text: str) -> list[str]:
    """Secrets written in the compose file or the example env file (empty list: none).

    In the compose file, a variable named like a secret (``*PASSWORD``, ``*SECRET``, ``*TOKEN``,
    ``*API_KEY``, ``*_PAT``, ``*SALT``) must be a ``${VAR}`` reference, a URL's password too, and
    nothing may look like a real credential (Slack/Anthropic/GitHub/GitLab tokens, PEM keys).
    In ``.env.example`` such variables must be empty or ``change-me``.
    """
    out: list[str] = []
    doc = yaml.safe_load(compose_text) or {}
    for name, svc in (doc.get("services") or {}).items():
        env = svc.get("environment") or {}
        if isinstance(env, list):
            env = dict(e.split("=", 1) if "=" in e else (e, None) for e in env)
        for key, value in env.items():
            value = "" if value is None else str(value)
            if SECRET_KEY.search(key) and value and not re.fullmatch(r"\$\{[^}]+\}", value):
                out.append(f"compose: {name}.environment.{key} is written in the file; use ${{{key}}} from .env")
            m = re.search(r"://[^/:@\s]+:([^@\s]+)@", value)
            if m and not m.group(1).startswith("${"):
                out.append(f"compose: {name}.environment.{key} has a password in its URL; use ${{POSTGRES_PASSWORD}}")
    for i, line in enumerate(compose_text.splitlines(), 1):
        if SECRET_VALUE.search(line):
            out.append(f"compose: line {i} holds what looks like a credential")
    for i, line in enumerate(env_example_text.splitlines(), 1):
        m = re.match(r"^([A-Z][A-Z0-9_]*)=(.*)$", line)
        if m and SECRET_KEY.search(m.group(1)) and m.group(2).strip() not in PLACEHOLDERS:
            out.append(f".env.example: line {i}: {m.group(1)} must be empty or change-me")
        if SECRET_VALUE.search(line):
            out.append(f".env.example: line {i} holds what looks like a credential")
    return out


def check_compose(deploy: Path) -> list[str]:
    """Every compose problem (rendering, content, secrets)."""
    try:
        rendered = render_compose(deploy)
    except CheckFailed as exc:
        return [f"compose: {exc}"]
    return (compose_problems(rendered, deploy)
            + secret_problems((deploy / "docker-compose.yml").read_text(encoding="utf-8"),
                              (deploy / ".env.example").read_text(encoding="utf-8")))


# --- helm ---------------------------------------------------------------------------------

def schema_dir(version: str = KUBERNETES_VERSION) -> Path:
    """Folder of strict standalone-by-reference schemas for ``version`` from kubernetes-validate.

    Raises :class:`ToolMissing` when the package (or that version) is not installed.
    """
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.origin:
        raise ToolMissing("the Python package kubernetes-validate is not installed (pip install -e '.[test]')")
    d = Path(spec.origin).parent / "kubernetes-json-schema" / f"v{version}-local-strict"
    if not d.is_dir():
        raise ToolMissing(f"kubernetes-validate has no schemas for Kubernetes {version} ({d})")
    return d


def value_sets(deploy: Path) -> list[tuple[str, Path | None]]:
    """``[("default", None), ("single-node", path), ...]``: the chart defaults and deploy/helm/values/*.yaml."""
    return [("default", None)] + [(p.stem, p) for p in sorted((deploy / "helm/values").glob("*.yaml"))]


def helm_render(chart: Path, values: Path | None) -> str:
    """``helm lint --strict`` then ``helm template coderag CHART [-f VALUES]``: the manifests (YAML text).

    Raises :class:`CheckFailed` with helm's message.
    """
    exe = tool("helm")
    extra = ["-f", str(values)] if values else []
    with tempfile.TemporaryDirectory(prefix="coderag-helm-") as home:
        env = {**os.environ, "HELM_CACHE_HOME": f"{home}/cache", "HELM_CONFIG_HOME": f"{home}/config",
               "HELM_DATA_HOME": f"{home}/data"}
        lint = _run([exe, "lint", "--strict", str(chart), *extra], env=env)
        if lint.returncode != 0:
            msg = [ln.strip() for ln in (lint.stdout + lint.stderr).splitlines() if "[ERROR]" in ln or "Error" in ln]
            raise CheckFailed("helm lint: " + ("; ".join(msg) or lint.stdout.strip()))
        tpl = _run([exe, "template", "coderag", str(chart), *extra], env=env)
        if tpl.returncode != 0:
            raise CheckFailed(f"helm template: {tpl.stderr.strip()}")
        return tpl.stdout


def offline_schemas(dest: Path, version: str = KUBERNETES_VERSION) -> str:
    """Write kubernetes-validate's schemas for ``version`` under ``dest`` in a form kubeconform loads.

    The package's schemas point at ``/api/_definitions.json#/$defs/...`` under their
    ``https://kubernetes.io/api/...`` ``$id`` (resolved by its own loader); the copies point at
    the ``_definitions.json`` beside them by absolute ``file://`` URL instead. Returns the
    ``-schema-location`` template.
    """
    src = schema_dir(version)
    dest.mkdir(parents=True, exist_ok=True)
    definitions = (dest / "_definitions.json").resolve().as_uri()
    for f in src.glob("*.json"):
        text = f.read_text(encoding="utf-8").replace('"/api/_definitions.json#', f'"{definitions}#')
        (dest / f.name).write_text(text, encoding="utf-8")
    return dest.resolve().as_uri() + "/{{ .ResourceKind }}{{ .KindSuffix }}.json"


@functools.lru_cache(maxsize=None)
def shared_schemas(version: str = KUBERNETES_VERSION) -> str:
    """:func:`offline_schemas` once per process (in a temporary folder removed at exit)."""
    tmp = tempfile.mkdtemp(prefix="coderag-schemas-")
    atexit.register(shutil.rmtree, tmp, True)
    return offline_schemas(Path(tmp), version)


def kubeconform_problems(manifests: str, version: str = KUBERNETES_VERSION,
                         location: str | None = None) -> tuple[int, list[str]]:
    """Validate ``manifests`` (YAML text) with ``kubeconform -strict`` against the offline schemas.

    ``location``: a template from :func:`offline_schemas` (default: :func:`shared_schemas`).
    Returns ``(resources validated, problems)``; a kind without a schema is a problem.
    """
    exe = tool("kubeconform")
    location = location or shared_schemas(version)
    proc = _run([exe, "-strict", "-kubernetes-version", version, "-schema-location", location,
                 "-output", "json", "-verbose", "-"], input=manifests)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return 0, [f"kubeconform: {proc.stderr.strip() or proc.stdout.strip()}"]
    resources = report.get("resources") or []
    problems = [f"kubeconform: {r.get('kind')} {r.get('name')}: {r.get('msg')}" for r in resources
                if r.get("status") != "statusValid"]
    if proc.returncode != 0 and not problems:
        problems.append(f"kubeconform: exit {proc.returncode}: {proc.stderr.strip()}")
    return sum(r.get("status") == "statusValid" for r in resources), problems


def manifests_by_kind(manifests: str) -> dict[tuple[str, str], dict]:
    """``{(kind, name): resource}`` of a multi-document YAML text."""
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(manifests) if d}


def chart_problems(manifests: str, *, default_values: bool) -> list[str]:
    """Content checks of a render: probes on every coderag container, one Recreate indexer,
    a worker Deployment running `coderag worker` with replicas only when the index queue is
    on, replication factor set; with the default values no Secret carries a value."""
    out: list[str] = []
    res = manifests_by_kind(manifests)
    deployments = {n: d for (k, n), d in res.items() if k == "Deployment"}
    for name, dep in deployments.items():
        for c in dep["spec"]["template"]["spec"].get("containers", []):
            for probe in ("readinessProbe", "livenessProbe"):
                if probe not in c:
                    out.append(f"helm: {name} container {c.get('name')} has no {probe}")
    indexer = next((d for n, d in deployments.items() if n.endswith("-indexer")), None)
    if indexer is None:
        out.append("helm: no indexer Deployment")
    elif indexer["spec"].get("replicas") != 1 or indexer["spec"].get("strategy", {}).get("type") != "Recreate":
        out.append("helm: the indexer must be 1 replica with strategy Recreate (one scheduler)")
    if not any(n.endswith("-bot") for n in deployments):
        out.append("helm: no bot Deployment")
    worker = next((d for n, d in deployments.items() if n.endswith("-worker")), None)
    cms = [d for (k, _), d in res.items() if k == "ConfigMap"]
    queue = next(((c.get("data") or {}).get("CODERAG_INDEX_QUEUE") for c in cms
                  if "CODERAG_INDEX_QUEUE" in (c.get("data") or {})), "threads")
    if worker is None:
        out.append("helm: no worker Deployment")
    else:
        args = worker["spec"]["template"]["spec"]["containers"][0].get("args") or []
        if args[:1] != ["worker"]:
            out.append(f"helm: the worker container runs {args[:1]}, not `coderag worker`")
        replicas = worker["spec"].get("replicas", 1)
        if queue == "procrastinate" and not replicas:
            out.append("helm: CODERAG_INDEX_QUEUE is procrastinate but no worker replica runs the jobs")
        if queue != "procrastinate" and replicas:
            out.append("helm: worker replicas without CODERAG_INDEX_QUEUE=procrastinate would have no jobs")
    if not any("CODERAG_REPLICATION_FACTOR" in (c.get("data") or {}) for c in cms):
        out.append("helm: no ConfigMap sets CODERAG_REPLICATION_FACTOR")
    if default_values:
        for (k, n), d in res.items():
            if k == "Secret" and (d.get("stringData") or d.get("data")):
                out.append(f"helm: Secret {n} carries values with the default values.yaml")
    return out


def check_helm(deploy: Path, only: set[str] | None = None) -> tuple[list[str], list[str]]:
    """``(report lines, problems)`` for every value set (or those named in ``only``)."""
    chart = deploy / "helm/coderag"
    lines, problems = [], []
    for name, values in value_sets(deploy):
        if only is not None and name not in only:
            continue
        try:
            manifests = helm_render(chart, values)
        except CheckFailed as exc:
            problems.append(f"helm[{name}]: {exc}")
            continue
        n, bad = kubeconform_problems(manifests)
        bad += chart_problems(manifests, default_values=values is None)
        problems += [f"helm[{name}]: {p}" for p in bad]
        lines.append(f"helm[{name}]: lint ok, {n} resources valid for Kubernetes {KUBERNETES_VERSION}"
                     + ("" if not bad else f", {len(bad)} problem(s)"))
    return lines, problems


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit code."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compose", action="store_true", help="check deploy/docker-compose.yml")
    ap.add_argument("--helm", action="store_true", help="check deploy/helm/coderag with every value set")
    ap.add_argument("--deploy", type=Path, default=ROOT / "deploy", help="the deploy folder (default: %(default)s)")
    args = ap.parse_args(argv)
    both = not (args.compose or args.helm)
    problems: list[str] = []
    try:
        if args.compose or both:
            found = check_compose(args.deploy)
            print("compose: " + ("ok" if not found else f"{len(found)} problem(s)"))
            problems += found
        if args.helm or both:
            lines, found = check_helm(args.deploy)
            print("\n".join(lines))
            problems += found
    except ToolMissing as exc:
        print(f"check_deploy: error: {exc}", file=sys.stderr)
        return 2
    for p in problems:
        print(f"  {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
