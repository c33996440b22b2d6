"""An embedded server process that runs one delegated turn and prints the threads alive after
it, each with whether the project started it (tests/test_process_threads.py runs it).

`python -m tests.threads_probe USER_ID TEXT`, with DATABASE_URL naming the test database and
no broker: the ASGI app is loaded (so the in-process beat starts), the turn runs on the
in-process pool, and once its root run has ended every live thread is listed as JSON.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tuple(f"{ROOT / app}/" for app in ("agents", "chat", "config", "delegation", "reminders"))

_by_project: dict[threading.Thread, bool] = {}  # each thread started, and whether by our code
_start = threading.Thread.start


def _recorded_start(thread: threading.Thread) -> None:
    """Thread.start, noting whether project code is on the stack that starts it."""
    stack = traceback.extract_stack()[:-1]
    _by_project[thread] = any(frame.filename.startswith(PROJECT) for frame in stack)
    _start(thread)


def record_thread_starts() -> None:
    """From now on, note for each thread started whether the project started it."""
    threading.Thread.start = _recorded_start  # type: ignore[method-assign,assignment]


def live_threads() -> list[dict[str, object]]:
    """Every live thread: its name and whether the project started it."""
    return [
        {"name": thread.name, "project": _by_project.get(thread, False)}
        for thread in threading.enumerate()
    ]


def main(user_id: int, text: str) -> None:
    record_thread_starts()  # before Django or the project can start anything
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    import config.asgi  # noqa: F401  (the embedded server: its in-process beat starts)
    from delegation.models import FINAL_STATUSES, Run
    from delegation.turns import turn_start

    user = get_user_model().objects.get(pk=user_id)
    sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=text)
    deadline = time.monotonic() + 30
    runs = Run.objects.filter(session_id=sent.message.session_id)
    while not runs.filter(parent=None, status__in=FINAL_STATUSES).exists():
        assert time.monotonic() < deadline, "the turn did not end within 30 s"
        time.sleep(0.05)
    statuses = {run.agent.name: run.status for run in runs.select_related("agent")}
    print(json.dumps({"runs": statuses, "threads": live_threads()}))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
