"""Where the processes tests start (daphne, Celery workers, Redis) write, and how a failing
test's report shows what they logged during it.

Each pytest-xdist worker writes its own files (`daphne-gw0.log`), so two tests running at once
never interleave one log or share a beat schedule.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "test-output"
FOLLOWED_LOGS = pytest.StashKey[dict[str, tuple[Path, int]]]()
# An access line: 127.0.0.1:41702 - - [23/Nov/2026:20:28:48] "GET /" 200 6369
ACCESS_LINE = re.compile(r"\d+ - - \[\d\d/\w+/\d{4}:")


def output_path(name: str) -> Path:
    """test-output/`name`, with this xdist worker's id before the suffix (`daphne-gw1.log`)."""
    OUTPUT.mkdir(exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    stem, dot, suffix = name.partition(".")
    return OUTPUT / (f"{stem}-{worker}{dot}{suffix}" if worker else name)


def log_file(name: str) -> Any:
    """An append-mode log under test-output/ that a child process writes to."""
    return open(output_path(name), "ab")  # noqa: SIM115  (outlives this function)


def follow_log(node: pytest.Item, name: str) -> None:
    """Have a failing test's report show what the server writing test-output/`name` logged
    during the test (its warnings, errors and tracebacks; access lines left out), so a failure
    in CI explains itself (tests/conftest.py, pytest_runtest_makereport)."""
    path = output_path(name)
    offset = path.stat().st_size if path.exists() else 0
    logs = node.stash.setdefault(FOLLOWED_LOGS, {})
    logs.setdefault(name, (path, offset))


def followed_logs(node: pytest.Item, lines: int = 80) -> list[tuple[str, str]]:
    """(title, text) of each log the test followed: its last `lines` lines other than access."""
    sections = []
    for path, offset in node.stash.get(FOLLOWED_LOGS, {}).values():
        if not path.exists():
            continue
        with open(path, "rb") as log:
            log.seek(offset)
            text = log.read().decode("utf-8", "replace")
        kept = [line for line in text.splitlines() if not ACCESS_LINE.search(line)]
        title = f"{path.relative_to(ROOT)} during the test"
        sections.append((title, "\n".join(kept[-lines:])))
    return sections
