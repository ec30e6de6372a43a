"""One settings model (common/settings.py): every variable declared with type, default
and description; one rule for malformed values; the table of docs/configuration.md and deploy/.env.example
checked against it; no other module reads os.environ for coderag's own settings."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from common.errors import BadInput, ExitCode
from common.settings import declared_variables, load, markdown_table

ROOT = Path(__file__).resolve().parents[2]
# A variable name inside a string literal or docstring markup: "NAME", 'NAME', `NAME`.
QUOTED_NAME = re.compile(r"[\"'`]((?:CODERAG|SLACK|WEAVIATE|VOYAGE|ANTHROPIC)_[A-Z0-9_]*[A-Z0-9])\b")
# Compose-only or SDK-read names that .env.example mentions without coderag reading them.
NOT_CODERAG = {
    "ANTHROPIC_BASE_URL",  # read by the anthropic SDK itself
    "COMPOSE_PROJECT_NAME",  # docker-compose's own variable, in deploy/.env.example
    "CODERAG_WORKERS",  # compose only: replicas of the coderag-worker service
    "CODERAG_FAULT_AT", "CODERAG_FAULT_FILE",  # test-only fault injection (indexer/store/faults.py)
}


def test_every_variable_is_declared_with_type_default_and_description():
    declared = declared_variables()
    assert len(declared) >= 55
    for name, (_group, f) in declared.items():
        assert f.description, name
        assert f.annotation is not None, name
        assert not f.is_required(), f"{name} has no default"


def test_configuration_page_table_is_the_generated_one():
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    start, end = "<!-- settings-table:start -->\n", "<!-- settings-table:end -->"
    assert text[text.index(start) + len(start):text.index(end)] == markdown_table()


def test_env_example_lists_exactly_the_declared_variables():
    text = (ROOT / "deploy" / ".env.example").read_text(encoding="utf-8")
    assigned = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", text, re.M)) - {"POSTGRES_PASSWORD"}
    assert assigned - NOT_CODERAG == set(declared_variables())


def test_code_reads_only_declared_variables():
    """Every CODERAG_*/SLACK_*/... name in a string literal of the code is declared."""
    declared = set(declared_variables())
    found: dict[str, str] = {}
    for pkg in ("common", "indexer", "bot"):
        for path in (ROOT / pkg).rglob("*.py"):
            for name in QUOTED_NAME.findall(path.read_text(encoding="utf-8")):
                found.setdefault(name, str(path.relative_to(ROOT)))
    unknown = {n: p for n, p in found.items() if n not in declared and n not in NOT_CODERAG}
    assert unknown == {}


# os.environ outside common/settings.py: the documented exceptions only.
ALLOWED_ENV_READS = {
    "indexer/embeddings/local.py": "HF_*/TRANSFORMERS_* set to offline for the model loader",
    "indexer/store/weaviate_server.py": "GOPATH (finding weaviate-server) and the child process environment",
    "bot/tenancy.py": "a docstring",
    "common/redact.py": "the current values of the secret variables, to mask them in logs and errors",
    "indexer/drift/extract.py": "docstrings: doc code that reads os.environ is a reference to check",
    "indexer/store/faults.py": "CODERAG_FAULT_AT/_FILE: test-only fault injection, unset in production",
    "common/db.py": "libpq's PGCONNECT_TIMEOUT/PGOPTIONS, set for a short command's connections and restored",
}


def test_os_environ_only_in_the_settings_module_and_documented_exceptions():
    offenders = []
    for pkg in ("common", "indexer", "bot"):
        for path in (ROOT / pkg).rglob("*.py"):
            rel = str(path.relative_to(ROOT))
            if rel == "common/settings.py" or rel in ALLOWED_ENV_READS:
                continue
            if re.search(r"os\.environ|os\.getenv|getenv\(", path.read_text(encoding="utf-8")):
                offenders.append(rel)
    assert offenders == []


@pytest.mark.parametrize("name", [n for n, (_g, f) in declared_variables().items()
                                  if f.annotation not in (str, "str") and "str" not in str(f.annotation)
                                  and "Path" not in str(f.annotation)
                                  and (f.json_schema_extra or {}).get("kind") != "text"])  # any word is text
def test_malformed_value_is_one_line_naming_the_variable(name):
    with pytest.raises(BadInput) as info:
        load({name: "not-a-value"})
    message = str(info.value)
    assert message.startswith(f"{name} must be ") and "\n" not in message
    assert info.value.exit_code == ExitCode.USAGE


@pytest.mark.parametrize("name, value, message", [
    ("CODERAG_METRICS_PORT", "99999", "must be a whole number from 0 to 65535, got '99999'"),
    ("CODERAG_METRICS_PORT", "-1", "must be a whole number from 0 to 65535, got '-1'"),
    ("CODERAG_MAX_FILE_BYTES", "1.5", "must be a whole number >= 1, got '1.5'"),
    ("CODERAG_STALE_HOURS", "-1", "must be a number >= 0, got '-1'"),
    ("CODERAG_CLAUDE_TIMEOUT", "0", "must be a number > 0, got '0'"),
    ("CODERAG_RETENTION_DAYS", "-3", "must be a whole number of days >= 1, or off (0, off, never, none), got '-3'"),
    ("CODERAG_SCHEDULER", "maybe", "must be on/off (1, true, yes, on / 0, false, no, off), got 'maybe'"),
    ("CODERAG_ROLE", "web", "must be one of 'all', 'bot' or 'indexer', got 'web'"),
    ("CODERAG_DRIFT_SPACE_REPOS", '{"OPS": "payments"}',
     """must be a JSON object {"source": ["repo", ...]}, got '{"OPS": "payments"}': ["OPS"] is not a list"""),
    ("CODERAG_DRIFT_SPACE_REPOS", '{"OPS": ["payments", 7]}',
     """must be a JSON object {"source": ["repo", ...]}, got '{"OPS": ["payments", 7]}': ["OPS"][1] is not a string"""),
    ("CODERAG_DRIFT_SPACE_REPOS", '["payments"]',
     """must be a JSON object {"source": ["repo", ...]}, got '["payments"]': the JSON is not an object"""),
    ("CODERAG_DRIFT_EXCLUDE", "{x",
     """must be a JSON list of fnmatch globs ["*changelog*", ...], got '{x': not valid JSON (Expecting property """
     "name enclosed in double quotes at character 2)"),
    ("CODERAG_EXPERTS_CHAT_USERS", '{"a@example.com": 5}',
     """must be a JSON object {"git e-mail": "chat user"}, got '{"a@example.com": 5}': ["a@example.com"] is not a string"""),
])
def test_malformed_value_names_the_variable_the_value_and_the_expected_form(name, value, message):
    with pytest.raises(BadInput) as info:
        load({name: value})
    assert str(info.value) == f"{name} {message}"


BAD_VALUES = ("not-a-value", "99999999999", "-99999", "0", "1.5", "nan", '{"x": [1, {"y": 2}]}', "[1, 2]", "{x")


def test_no_malformed_value_gets_a_vague_message():
    """Whatever the variable and whatever is wrong with its value, the message is one line
    naming the variable and a concrete form, never "a valid value"."""
    vague = []
    for name in declared_variables():
        for value in BAD_VALUES:
            try:
                load({name: value})
            except BadInput as exc:
                text = str(exc)
                if "valid value" in text or "\n" in text or not text.startswith((f"{name} must be ", f"{name}: ")):
                    vague.append(text)
    assert vague == []


def test_a_malformed_secret_is_not_shown():
    from common.settings import _Group, var

    class Secretive(_Group):
        pin: int = var("CODERAG_TEST_PIN", 0, "a secret number", secret=True, ge=0)

    with pytest.raises(BadInput) as info:
        Secretive.from_env({"CODERAG_TEST_PIN": "hunter2-secret"})
    assert str(info.value) == "CODERAG_TEST_PIN must be a whole number >= 0, got a secret value of 14 characters"


def test_empty_means_default_and_values_are_typed():
    s = load({"CODERAG_STALE_HOURS": "", "CODERAG_SCHEDULER": "off", "CODERAG_ROLE": "Indexer",
              "CODERAG_MAX_FILE_BYTES": "2048", "CODERAG_TEAMS": "1"})
    assert s.chat.stale_hours == 24.0 and s.process.scheduler is False and s.process.role == "indexer"
    assert s.core.max_file_bytes == 2048 and s.teams.enabled is True


def test_the_cli_fails_on_a_malformed_value_before_any_work(tmp_path):
    env = dict(os.environ, CODERAG_STALE_HOURS="abc", CODERAG_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "bot.cli", "status"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == ExitCode.USAGE
    assert proc.stderr.strip() == "coderag: error: CODERAG_STALE_HOURS must be a number >= 0, got 'abc'"
    assert not (tmp_path / "coderag.db").exists()  # failed before opening anything


def test_conftest_clears_every_declared_variable():
    leaked = [n for n in declared_variables() if n in os.environ and n != "WEAVIATE_BINARY"]
    assert leaked == []


SECRET_URL = "https://bob:ghp_SECRETtoken0123456789abcdef@github.com/x/y.git"


@pytest.mark.parametrize("entry, message", [
    ({"max_refs": 0}, "max_refs of repo 'y' must be a whole number from 1 to 50"),
    ({"max_refs": "5"}, "max_refs of repo 'y' must be a whole number from 1 to 50"),
    ({"refs": "v*"}, "refs of repo 'y' must be a list of tag patterns or branch names"),
    ({"refs": ["v*", "a..b"]}, "refs of repo 'y': 'a..b' is no tag pattern or branch name"),
])
def test_a_bad_refs_field_names_the_field_and_never_the_url_secret(entry, message):
    """A valid CODERAG_REPOS list with one bad refs/max_refs field: the message says just
    that field, and the repo URL's credential is never shown (nor is it when the JSON
    itself is malformed: the URL is redacted)."""
    value = json.dumps([{"url": SECRET_URL, "name": "y", **entry}])
    with pytest.raises(BadInput) as info:
        load({"CODERAG_REPOS": value})
    assert str(info.value) == f"CODERAG_REPOS: {message}"
    with pytest.raises(BadInput) as info:
        load({"CODERAG_REPOS": value[:-1]})  # not valid JSON: the raw value is shown, redacted
    assert "ghp_SECRET" not in str(info.value) and "https://bob:***@github.com" in str(info.value)
