"""The architecture contracts in ``.importlinter`` (checked by ``lint-imports`` in .ci/run)
hold on the code, and each one reports a deliberately bad import in a temporary copy."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("common", "indexer", "bot")

LAYERS = "bot -> indexer -> common: indexer never imports bot, common imports neither"
API = "bot imports only the indexer's interface: indexer, indexer.read"
READ = "the answering modules import the indexer only through indexer.read"
ACYCLIC = "no import cycles between the subpackages of common, indexer and bot"
PIPELINE = "the pipeline imports no source, subscriber or use case"


def _lint_imports() -> list[str]:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(exe).exists():
        pytest.fail("lint-imports not installed: pip install -e '.[test]' (import-linter)")
    return [exe]


def _run(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([*_lint_imports(), "--no-cache", "--config", str(root / ".importlinter")], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "tree"
    dst.mkdir()
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, dst / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", dst / ".importlinter")
    return dst


def _broken(out: str) -> set[str]:
    return {name for name in (LAYERS, API, READ, ACYCLIC, PIPELINE) if f"{name} BROKEN" in out}


def test_contracts_hold_on_the_code():
    proc = _run(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert all(f"{name} KEPT" in proc.stdout for name in (LAYERS, API, READ, ACYCLIC, PIPELINE)), proc.stdout


@pytest.mark.parametrize("module, bad_import, contract", [
    # indexer reaching into the bot
    ("indexer/models.py", "import bot.answer.service", LAYERS),
    # the shared package reaching into the indexer
    ("common/identifiers.py", "import indexer.models", LAYERS),
    # the bot bypassing indexer's public API
    ("bot/doctor.py", "from indexer.store import schema", API),
    # an answering module reaching past indexer.read: a use case, a store internal
    ("bot/answer/service.py", "from indexer import ChunkStore", READ),
    ("bot/impact.py", "from indexer.store import schema", {API, READ}),
    # a package cycle: store -> freshness while freshness -> store
    ("indexer/store/sql_models.py", "import indexer.freshness.status", ACYCLIC),
    # the pipeline importing a subscriber or a use case (an upward import: a package cycle too)
    ("indexer/stages.py", "import indexer.drift.models", {PIPELINE, ACYCLIC}),
    ("indexer/results.py", "import indexer.operations", {PIPELINE, ACYCLIC}),
])
def test_each_contract_reports_a_bad_import(tmp_path, module, bad_import, contract):
    tree = _copy(tmp_path)
    assert _run(tree).returncode == 0  # the copy itself is clean
    path = tree / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{bad_import}  # deliberately bad\n", encoding="utf-8")
    proc = _run(tree)
    assert proc.returncode != 0
    assert _broken(proc.stdout) == (contract if isinstance(contract, set) else {contract}), proc.stdout


def _interface_lists() -> dict[str, set[str]]:
    """The ``forbidden_modules`` of the two interface contracts, by contract section."""
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / ".importlinter")
    return {name: set(cfg[f"importlinter:contract:{name}"]["forbidden_modules"].split())
            for name in ("indexer-api", "read-side")}


def test_the_interface_contracts_forbid_every_other_module_of_the_indexer():
    """A new module under indexer/ is forbidden to the bot until someone decides otherwise."""
    children = {f"indexer.{p.stem if p.suffix == '.py' else p.name}" for p in (ROOT / "indexer").iterdir()
                if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    interface = {"indexer.read"}
    lists = _interface_lists()
    assert lists["indexer-api"] == children - interface
    packages = {c for c in children if (ROOT / c.replace(".", "/")).is_dir()}
    assert lists["read-side"] == {"indexer"} | (children - interface) | {f"{p}.**" for p in packages}
