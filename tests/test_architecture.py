"""Dependencies point one way (ARCHITECTURE.md), and no import between apps hides in a function."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.source_facts import source_facts

ROOT = Path(__file__).resolve().parents[1]
APPS = ("agents", "chat", "delegation", "reminders", "config")


def _function_level_imports_between_apps() -> list[str]:
    """`file:line module` for every import of another app made inside a function or method."""
    paths = [
        path
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        # AppConfig.ready() importing its own app's tool modules is Django's way
        if "migrations" not in path.parts and path.name != "apps.py"
    ]
    found = source_facts("imports", paths, APPS)
    return sorted({line for lines in found.values() for line in lines})


def test_no_import_between_apps_inside_a_function() -> None:
    assert _function_level_imports_between_apps() == []


def test_layers_contracts_are_kept() -> None:
    """import-linter's layers contracts (.importlinter): reminders → delegation → chat → agents
    → config for services, selectors and models; inside delegation, the features above the
    engine (evals, turns, humans) and the engine's own layers (steps → routing → tree → runs →
    usage → models); entry points may import anything."""
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "2 kept, 0 broken" in result.stdout


def _lint_with(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess[str]:
    """lint-imports on a copy of the tree where `module` (a path under the root) adds `line`."""
    for app in APPS:
        subprocess.run(["cp", "-r", str(ROOT / app), str(tmp_path / app)], check=True)
    changed = tmp_path / module
    changed.write_text(changed.read_text() + f"\n{line}  # noqa\n")
    (tmp_path / ".importlinter").write_text((ROOT / ".importlinter").read_text())
    return subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )


def test_the_layers_check_catches_an_upward_import(tmp_path: Path) -> None:
    """The contract is not vacuous: an import from a lower layer to a higher one breaks it."""
    result = _lint_with(tmp_path, "agents/selectors.py", "from delegation.models import Run")
    assert result.returncode != 0
    assert "agents.selectors -> delegation.models" in result.stdout


def test_the_engine_check_catches_an_engine_importing_a_feature(tmp_path: Path) -> None:
    """Inside delegation too: the engine calls humans through its hooks, never by import."""
    line = "from delegation.humans.activity import activity_record"
    result = _lint_with(tmp_path, "delegation/runs/ending.py", line)
    assert result.returncode != 0
    assert "delegation.runs.ending -> delegation.humans.activity" in result.stdout
