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


def test_layers_contract_is_kept() -> None:
    """import-linter's layers contract (.importlinter): reminders → delegation → chat → agents →
    config for services, selectors and models; entry points may import anything."""
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 kept, 0 broken" in result.stdout


def test_the_layers_check_catches_an_upward_import(tmp_path: Path) -> None:
    """The contract is not vacuous: an import from a lower layer to a higher one breaks it."""
    # Run against a copy of the tree where agents.selectors imports delegation.models.
    for app in APPS:
        subprocess.run(["cp", "-r", str(ROOT / app), str(tmp_path / app)], check=True)
    selectors = tmp_path / "agents" / "selectors.py"
    selectors.write_text(selectors.read_text() + "\nfrom delegation.models import Run  # noqa\n")
    (tmp_path / ".importlinter").write_text((ROOT / ".importlinter").read_text())
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode != 0
    assert "agents.selectors -> delegation.models" in result.stdout
