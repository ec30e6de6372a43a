"""The deployment checks of scripts/check_deploy.py pass on deploy/ and catch a broken copy.

Real tools: ``docker-compose config``, ``helm lint``/``helm template``, ``kubeconform`` (installed
by ``scripts/install.sh --test``). Without them the tests skip, except in CI (``CI`` set), where a
missing tool fails.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_deploy", ROOT / "scripts/check_deploy.py")
check_deploy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_deploy)


def _need(*tools: str) -> None:
    try:
        for t in tools:
            check_deploy.tool(t)
        if "kubeconform" in tools:
            check_deploy.schema_dir()
    except check_deploy.ToolMissing as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.fixture
def deploy_copy(tmp_path) -> Path:
    """A throw-away copy of deploy/ (the compose build context is its parent, tmp_path)."""
    dst = tmp_path / "deploy"
    shutil.copytree(ROOT / "deploy", dst, ignore=shutil.ignore_patterns(".env"))
    return dst


def _edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, count), encoding="utf-8")


# --- compose ------------------------------------------------------------------------------

def test_compose_renders_and_passes():
    _need("docker-compose")
    assert check_deploy.check_compose(ROOT / "deploy") == []


def test_rendered_compose_takes_the_password_from_the_env_file(deploy_copy):
    _need("docker-compose")
    _edit(deploy_copy / ".env.example", "POSTGRES_PASSWORD=change-me", "POSTGRES_PASSWORD=pw-from-env-file")
    svc = check_deploy.render_compose(deploy_copy)["services"]
    assert svc["postgres"]["environment"]["POSTGRES_PASSWORD"] == "pw-from-env-file"
    assert ":pw-from-env-file@postgres:5432/" in svc["coderag-bot"]["environment"]["CODERAG_DATABASE_URL"]
    assert svc["coderag-bot"]["environment"]["CODERAG_ROLE"] == "bot"
    assert svc["coderag-indexer"]["environment"]["CODERAG_ROLE"] == "indexer"


# (what to break in deploy/docker-compose.yml, the problem that must be reported)
COMPOSE_BREAKS = {
    "misspelled key": (("  depends_on:\n    weaviate:", "  depend_on:\n    weaviate:"),
                       r"docker-compose config: .*depend_on"),
    "no healthcheck": (lambda doc: doc["services"]["coderag-bot"].pop("healthcheck"),
                       r"coderag-bot has no healthcheck"),
    "weaviate data not on a volume": (("      - weaviate_data:/var/lib/weaviate\n", "      - /tmp:/tmp\n"),
                                      r"weaviate data \(/var/lib/weaviate\) is not on a named volume"),
    "postgres data not on a volume": (("      - postgres_data:/var/lib/postgresql/data\n", "      - /tmp:/tmp\n"),
                                      r"postgres data .* is not on a named volume"),
    "bot does not wait for healthy deps": (("      condition: service_healthy\n    postgres:",
                                            "      condition: service_started\n    postgres:"),
                                           r"coderag-bot does not wait for weaviate to be healthy"),
    "no image nor build": (("    image: postgres:16-alpine\n", ""), r"postgres has neither (an )?image nor (a )?build"),
    "secret in the file": (("      CODERAG_ROLE: bot ", "      SLACK_BOT_TOKEN: xoxb-1234-5678-abcdef\n      CODERAG_ROLE: bot "),
                           r"SLACK_BOT_TOKEN is written in the file"),
    "worker runs another command": (('    command: ["worker"]\n', '    command: ["serve"]\n'),
                                    r"coderag-worker runs serve, not `coderag worker`"),
    "worker without a command": (('    command: ["worker"]\n', ''),
                                 r"coderag-worker runs the image default \(serve\), not `coderag worker`"),
    "worker replicas without the queue": (("      replicas: ${CODERAG_WORKERS:-0}\n", "      replicas: 3\n"),
                                          r"coderag-worker has 3 replica\(s\) without CODERAG_INDEX_QUEUE=procrastinate"),
    "queue on without a worker": (("  CODERAG_HOME: /data\n", "  CODERAG_HOME: /data\n  CODERAG_INDEX_QUEUE: procrastinate\n"),
                                  r"CODERAG_INDEX_QUEUE is procrastinate but no coderag-worker replica runs the jobs"),
    "password in a URL": (("coderag:${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in deploy/.env}@postgres",
                           "coderag:hunter2@postgres"), r"has a password in its URL"),
}


@pytest.mark.parametrize("case", sorted(COMPOSE_BREAKS))
def test_a_broken_compose_file_is_reported(deploy_copy, case):
    _need("docker-compose")
    edit, expected = COMPOSE_BREAKS[case]
    path = deploy_copy / "docker-compose.yml"
    if callable(edit):  # on the parsed file (anchors expanded), written back
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        edit(doc)
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    else:
        _edit(path, *edit)
    problems = check_deploy.check_compose(deploy_copy)
    assert any(re.search(expected, p, flags=re.S) for p in problems), problems


def test_compose_workers_with_the_queue_on_pass(deploy_copy):
    _need("docker-compose")
    _edit(deploy_copy / ".env.example", "\nCODERAG_WORKERS=0\n", "\nCODERAG_WORKERS=3\nCODERAG_INDEX_QUEUE=procrastinate\n")
    rendered = check_deploy.render_compose(deploy_copy)
    assert rendered["services"]["coderag-worker"]["deploy"]["replicas"] == 3
    assert check_deploy.compose_problems(rendered, deploy_copy) == []


def test_a_secret_in_env_example_is_reported(deploy_copy):
    _need("docker-compose")
    _edit(deploy_copy / ".env.example", "\nANTHROPIC_API_KEY=\n", "\nANTHROPIC_API_KEY=sk-ant-api03-abc\n")
    problems = check_deploy.check_compose(deploy_copy)
    assert any("ANTHROPIC_API_KEY must be empty or change-me" in p for p in problems), problems


# --- helm ---------------------------------------------------------------------------------

def test_every_value_set_lints_renders_and_validates():
    _need("helm", "kubeconform")
    names = [n for n, _ in check_deploy.value_sets(ROOT / "deploy")]
    assert names == ["default", "queue-workers", "single-node", "three-node"]
    lines, problems = check_deploy.check_helm(ROOT / "deploy")
    assert problems == []
    assert len(lines) == 4 and all("lint ok" in ln for ln in lines), lines


def test_queue_workers_values_run_workers_and_keep_one_scheduler():
    _need("helm")
    res = check_deploy.manifests_by_kind(
        check_deploy.helm_render(ROOT / "deploy/helm/coderag", ROOT / "deploy/helm/values/queue-workers.yaml"))
    worker = res[("Deployment", "coderag-coderag-worker")]
    assert worker["spec"]["replicas"] == 3
    assert worker["spec"]["template"]["spec"]["containers"][0]["args"][0] == "worker"
    assert res[("Deployment", "coderag-coderag-indexer")]["spec"]["replicas"] == 1
    assert res[("ConfigMap", "coderag-coderag")]["data"]["CODERAG_INDEX_QUEUE"] == "procrastinate"
    # and the check catches a queue nobody works on, or workers with no queue
    worker["spec"]["replicas"] = 0
    import yaml

    text = yaml.safe_dump_all(res.values())
    assert any("no worker replica" in p for p in check_deploy.chart_problems(text, default_values=False))


@pytest.mark.parametrize("name, bot_replicas, factor", [("single-node", 1, "1"), ("three-node", 2, "3")])
def test_value_sets_render_what_they_promise(name, bot_replicas, factor):
    _need("helm")
    res = check_deploy.manifests_by_kind(
        check_deploy.helm_render(ROOT / "deploy/helm/coderag", ROOT / f"deploy/helm/values/{name}.yaml"))
    assert res[("Deployment", "coderag-coderag-bot")]["spec"]["replicas"] == bot_replicas
    assert res[("Deployment", "coderag-coderag-indexer")]["spec"]["replicas"] == 1
    cm = res[("ConfigMap", "coderag-coderag")]["data"]
    assert cm["CODERAG_REPLICATION_FACTOR"] == factor
    assert cm["WEAVIATE_URL"] == "http://weaviate:80" and cm["WEAVIATE_GRPC_HOST"] == "weaviate-grpc"
    # the matching values for Weaviate's own chart: as many nodes as copies of each shard
    weaviate = yaml.safe_load((ROOT / f"deploy/helm/weaviate/{name}.yaml").read_text(encoding="utf-8"))
    assert weaviate["replicas"] == int(factor) == weaviate["env"]["RAFT_BOOTSTRAP_EXPECT"]
    assert weaviate["service"]["name"] == "weaviate" and weaviate["grpcService"]["name"] == "weaviate-grpc"


# (file under deploy/helm/, what to break, the problem that must be reported, value set checked)
HELM_BREAKS = {
    "misspelled key in a template": ("coderag/templates/_helpers.tpl", "  readinessProbe:", "  readinesProbe:",
                                     r"kubeconform: Deployment .*readinesProbe", "single-node"),
    "wrong type in a value file": ("values/three-node.yaml", "replicas: 2", "replicas: two",
                                   r"helm\[three-node\]: kubeconform: Deployment coderag-coderag-bot: .*replicas",
                                   "three-node"),
    "chart without a version": ("coderag/Chart.yaml", "version: 0.1.0\n", "", r"helm lint: .*version", "default"),
    "template syntax error": ("coderag/templates/service.yaml", "{{ .Values.service.type }}",
                              "{{ .Values.service.type }", r"helm lint: .*service.yaml", "default"),
    "indexer scaled": ("coderag/templates/indexer-deployment.yaml", "  replicas: 1\n", "  replicas: 2\n",
                       r"indexer must be 1 replica", "three-node"),
    "worker heartbeat not shorter than its stalled threshold": (
        "coderag/values.yaml", "  heartbeatSeconds: 10 ", "  heartbeatSeconds: 60 ",
        r"helm\[default\]: helm (lint|template): .*must be shorter than worker.stalledAfterSeconds", "default"),
    "secret value by default": ("coderag/values.yaml", 'ANTHROPIC_API_KEY: ""', 'ANTHROPIC_API_KEY: "sk-x"',
                                r"helm\[default\]: helm: Secret coderag-coderag-anthropic carries values", "default"),
}


@pytest.mark.parametrize("case", sorted(HELM_BREAKS))
def test_a_broken_chart_is_reported(deploy_copy, case):
    _need("helm", "kubeconform")
    rel, old, new, expected, value_set = HELM_BREAKS[case]
    _edit(deploy_copy / "helm" / rel, old, new)
    _, problems = check_deploy.check_helm(deploy_copy, only={value_set})
    assert any(re.search(expected, p, flags=re.S) for p in problems), problems


def test_cli_exit_codes(deploy_copy, capsys):
    _need("docker-compose")
    assert check_deploy.main(["--compose", "--deploy", str(deploy_copy)]) == 0
    _edit(deploy_copy / "docker-compose.yml", "    image: postgres:16-alpine\n", "")
    assert check_deploy.main(["--compose", "--deploy", str(deploy_copy)]) == 1
    assert re.search("postgres has neither (an )?image nor (a )?build", capsys.readouterr().out)
