"""What a process imports when it starts: the heavy libraries only its work needs wait until
they are used (the openai SDK about 0.9 s, pypdf and python-docx 0.3 s), unless agents default
to an OpenAI-compatible server, when the SDK is imported at start so no turn waits for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("openai", "pypdf", "docx")
PROBE = (
    "import json, sys, django; django.setup(); import config.asgi; "
    f"print(json.dumps({{name: name in sys.modules for name in {HEAVY!r}}}))"
)


def started_with(**env: str) -> dict[str, bool]:
    """Which heavy modules a fresh process has imported once the ASGI app is loaded."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DEFAULT_MODEL"))}
    full = {**base, "DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_DEBUG": "true", **env}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=full, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("provider", ["offline", "openai"])
def test_the_sdk_is_imported_at_start_only_when_agents_default_to_it(provider):
    imported = started_with(DEFAULT_MODEL_PROVIDER=provider)
    assert imported == {"openai": provider == "openai", "pypdf": False, "docx": False}


FROZEN = "import gc, django; django.setup(); {load}; print(gc.get_freeze_count())"


@pytest.mark.parametrize(
    "load",
    [
        "import config.asgi",
        "from celery.signals import worker_process_init; import config.celery_app; "
        "worker_process_init.send(sender=None)",
    ],
    ids=["asgi", "celery-worker"],
)
def test_a_server_or_worker_freezes_what_it_loaded_out_of_the_collectors_way(load):
    """A full collection scans only what the process made after start (config/collector.py)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_DEBUG": "true"}
    out = subprocess.run(
        [sys.executable, "-c", FROZEN.format(load=load)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip().splitlines()[-1]) > 10_000
