"""Every environment variable coderag reads is documented in the three places a deployer looks:
``deploy/.env.example``, the Helm values (``deploy/helm/coderag/values.yaml``, or the chart's
templates for the per-role ones) and the settings table of the manual (``docs/configuration.md``).

The variables are *found in the code*, not listed here:

* the one pydantic settings model, ``common/settings.py`` (``validation_alias`` of each field,
  ``env_prefix`` + field name otherwise; nested models are walked with the model's
  ``env_nested_delimiter``, so the test keeps working while settings move into one nested model);
* every remaining read of the environment in ``bot/``, ``indexer/`` and ``common/``, by AST:
  ``os.environ.get(X)``, ``os.environ[X]``, ``os.getenv(X)`` and ``env.get(X)`` / ``env[X]`` on a
  mapping named ``env``/``environ``. ``X`` is a string, a module-level string constant, or an
  f-string / concatenation (a *pattern* such as ``CODERAG_TEAMS_*``, which a documented name must
  match). When ``X`` is a parameter (a helper such as ``_env_num(name, ...)``), every string
  constant of that module shaped like one of our variables counts.
"""
from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CODE_DIRS = ("bot", "indexer", "common")
# Shape of a variable name; the fallback scan (unresolved argument) also needs one of our prefixes.
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_+[A-Z0-9]+)+$")
OUR_PREFIXES = ("CODERAG_", "WEAVIATE_", "SLACK_", "ANTHROPIC_", "VOYAGE_")
ENV_MAPPING_NAMES = {"env", "environ"}

# Read by the code but not coderag settings; each entry must still be read (checked below).
NOT_SETTINGS = {
    "GOPATH": "Go's own variable: where `go install` put weaviate-server",
    "CODERAG_FAULT_AT": "test-only fault injection (indexer/store/faults.py), unset in production",
    "CODERAG_FAULT_FILE": "test-only fault injection (indexer/store/faults.py), unset in production",
}
# Settings of the embedded mode only: in .env.example and the manual, not in the Helm values.
LOCAL_ONLY = {
    "WEAVIATE_BINARY": "the embedded server; deployments run Weaviate as a service",
    "WEAVIATE_LOG_LEVEL": "log level of the embedded server",
}


def _settings_vars() -> set[str]:
    """Variable names declared in the one settings model (``common.settings``: every group)."""
    from common.settings import declared_variables

    return set(declared_variables())


def _is_env_mapping(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "environ":
        return True  # os.environ
    if isinstance(node, ast.Name) and node.id in ENV_MAPPING_NAMES:
        return True
    # (os.environ if env is None else env)
    return isinstance(node, ast.IfExp) and (_is_env_mapping(node.body) or _is_env_mapping(node.orelse))


def _pattern(node: ast.AST, constants: dict[str, str]) -> str | None:
    """The name read (or a glob for an f-string/concatenation); None when it is a parameter."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "*" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _pattern(node.left, constants), _pattern(node.right, constants)
        return f"{left or '*'}{right or '*'}"
    return None


def scan_module(source: str) -> set[str]:
    """Names (or globs) of the environment variables one module reads."""
    tree = ast.parse(source)
    constants = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                 and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                 for t in n.targets if isinstance(t, ast.Name)}
    found: set[str] = set()
    unresolved = False
    for node in ast.walk(tree):
        arg = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            f = node.func
            if f.attr == "get" and _is_env_mapping(f.value):
                arg = node.args[0]
            elif f.attr == "getenv" and isinstance(f.value, ast.Name) and f.value.id == "os":
                arg = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_env_mapping(node.value):
            arg = node.slice
        if arg is None:
            continue
        name = _pattern(arg, constants)
        if name is None:
            unresolved = True
        else:
            found.add(name)
    if unresolved:  # e.g. os.environ.get(name) in a helper: the names are constants of this module
        found |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                  and ENV_NAME.match(n.value) and n.value.startswith(OUR_PREFIXES)}
    return found


def code_env_vars() -> set[str]:
    """Every variable (or glob) read by bot/ and indexer/, plus the Settings model's."""
    names = _settings_vars()
    for d in CODE_DIRS:
        for path in sorted((ROOT / d).rglob("*.py")):
            names |= scan_module(path.read_text(encoding="utf-8"))
    return names


def env_example_vars(text: str) -> set[str]:
    """``NAME=`` lines of an env file, commented-out ``# NAME=`` ones included."""
    return set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]*)=", text, flags=re.M))


def helm_vars(chart: Path) -> set[str]:
    """Keys of ``config`` and of every ``secrets.<provider>`` in values.yaml, and env names in templates."""
    values = yaml.safe_load((chart / "values.yaml").read_text(encoding="utf-8"))
    names = set(values.get("config") or {})
    for provider in (values.get("secrets") or {}).values():
        names |= {k for k in provider or {} if k != "existingSecret"}
    for tpl in (chart / "templates").glob("*"):
        names |= set(re.findall(r"-\s+name:\s+([A-Z][A-Z0-9_]+)\s*$", tpl.read_text(encoding="utf-8"), flags=re.M))
    return names


def documented_settings_vars(page: str) -> set[str]:
    """Backquoted names in the first column of the "Every setting" table of docs/configuration.md."""
    m = re.search(r"^## Every setting\n(.*?)(?=^## |\Z)", page, flags=re.M | re.S)
    assert m, "docs/configuration.md has no '## Every setting' section"
    names: set[str] = set()
    for line in m.group(1).splitlines():
        if line.startswith("|"):
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1]))
    return names


def missing(read: set[str], documented: set[str], skip: dict[str, str]) -> list[str]:
    """Names (or globs) read but neither documented nor skipped, sorted."""
    out = []
    for name in read:
        if any(fnmatch.fnmatchcase(name, s) or fnmatch.fnmatchcase(s, name) for s in skip):
            continue
        if "*" in name:
            if not any(fnmatch.fnmatchcase(d, name) for d in documented):
                out.append(name)
        elif name not in documented:
            out.append(name)
    return sorted(out)


@pytest.fixture(scope="module")
def read_vars() -> set[str]:
    return code_env_vars()


def test_scanner_finds_the_known_kinds_of_read(read_vars):
    # declared settings of several groups, and a direct os.environ.get read
    for name in ("WEAVIATE_URL", "CODERAG_DATABASE_URL", "SLACK_SIGNING_SECRET", "CODERAG_CHANNEL_SOURCES",
                 "CODERAG_CLAUDE_TIMEOUT", "CODERAG_TEAMS_CLIENT_ID", "CODERAG_PRICE_INPUT_PER_MTOK",
                 "CODERAG_FAULT_AT"):
        assert name in read_vars, name


def test_scanner_sees_a_new_read():
    src = ('import os\nFOO = "CODERAG_FROM_CONST"\n'
           'def f(env=None):\n    env = os.environ if env is None else env\n'
           '    return os.getenv("CODERAG_A"), os.environ["CODERAG_B"], env.get(FOO), env.get(f"CODERAG_X_{1}")\n')
    assert scan_module(src) == {"CODERAG_A", "CODERAG_B", "CODERAG_FROM_CONST", "CODERAG_X_*"}


def test_exemptions_are_still_read(read_vars):
    for name in list(NOT_SETTINGS) + list(LOCAL_ONLY):
        assert any(fnmatch.fnmatchcase(r, name) or r == name for r in read_vars), f"stale exemption {name}"


def test_every_variable_is_in_env_example(read_vars):
    documented = env_example_vars((ROOT / "deploy/.env.example").read_text(encoding="utf-8"))
    assert missing(read_vars, documented, NOT_SETTINGS) == []


def test_every_variable_is_in_helm_values(read_vars):
    assert missing(read_vars, helm_vars(ROOT / "deploy/helm/coderag"), {**NOT_SETTINGS, **LOCAL_ONLY}) == []


def test_every_variable_is_in_the_documented_settings_table(read_vars):
    documented = documented_settings_vars((ROOT / "docs/configuration.md").read_text(encoding="utf-8"))
    assert missing(read_vars, documented, NOT_SETTINGS) == []


def test_a_missing_variable_is_reported(read_vars, tmp_path):
    env = (ROOT / "deploy/.env.example").read_text(encoding="utf-8")
    broken = re.sub(r"^#?\s*CODERAG_STALE_HOURS=.*\n", "", env, flags=re.M)
    assert broken != env
    assert missing(read_vars, env_example_vars(broken), NOT_SETTINGS) == ["CODERAG_STALE_HOURS"]
    assert missing({"CODERAG_TEAMS_*"}, {"CODERAG_TEAMS"}, {}) == ["CODERAG_TEAMS_*"]
