"""Every background thread the project starts in a process is listed in one place
(config.db.per_process.PROCESS_THREADS), with what it is for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from config.db.per_process import PROCESS_THREADS, process_thread_listed
from delegation.models import RunStatus
from tests import threads_probe
from tests.databases import child_database_url
from tests.factories import make_agent

ROOT = Path(__file__).resolve().parents[1]


def probe_env() -> dict[str, str]:
    """An embedded server's environment (no broker, no Redis, the offline model) on the test
    database."""
    dropped = ("REDIS_URL", "CELERY_BROKER_URL", "TASKS_RUN_SYNC", "PYTEST_XDIST_WORKER")
    base = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("OPENAI_")}
    return {
        **base,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_DEBUG": "true",
        "DATABASE_URL": child_database_url(),
        "OFFLINE_MODEL_DELAY_MS": "0",
    }


@pytest.mark.django_db(transaction=True)  # the probe process reads what this test wrote
def test_every_thread_the_project_starts_in_an_embedded_turn_is_listed(user):
    expert = make_agent("expert", tags=["finance"])
    make_agent("lead", is_entry=True, subagents=[expert])
    out = subprocess.run(
        [sys.executable, "-m", "tests.threads_probe", str(user.pk), "ask finance about it"],
        cwd=ROOT,
        env=probe_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["runs"] == {"lead": RunStatus.SUCCEEDED, "expert": RunStatus.SUCCEEDED}
    ours = [thread["name"] for thread in seen["threads"] if thread["project"]]
    assert [name for name in ours if not process_thread_listed(name)] == []
    # The threads such a turn needs were seen, so the check above looked at real ones.
    assert {"run-keeper", "events", "in-process-beat"} <= set(ours)
    assert any(name.startswith("inprocess-task_") for name in ours)


def test_an_unlisted_thread_started_by_project_code_is_told_apart(monkeypatch):
    """The probe's test can fail: a thread started from a project module under a new name is
    the project's and not listed; one started from elsewhere is not the project's."""
    monkeypatch.setattr(threading.Thread, "start", threads_probe._recorded_start)
    stop = threading.Event()
    started = str(ROOT / "delegation" / "stray.py")  # as if delegation/stray.py started it
    code = compile("threading.Thread(target=stop.wait, name='stray').start()", started, "exec")
    exec(code, {"threading": threading, "stop": stop})
    threading.Thread(target=stop.wait, name="not-ours").start()
    try:
        by_name = {t["name"]: t["project"] for t in threads_probe.live_threads()}
        assert by_name["stray"] is True and not process_thread_listed("stray")
        assert by_name["not-ours"] is False
    finally:
        stop.set()


def test_a_pools_threads_are_listed_by_its_prefix():
    assert "inprocess-task" in PROCESS_THREADS
    assert process_thread_listed("inprocess-task_3") and process_thread_listed("run-keeper")
    assert not process_thread_listed("run-keeper_stray")  # a pool's threads are numbered
    assert not process_thread_listed("ThreadPoolExecutor-0_0")  # a pool the project never named
