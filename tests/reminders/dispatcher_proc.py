"""A dispatcher process for the multi-process tests: once set up and connected it prints
"ready" and waits for the file named in argv[1] to appear (the test's start signal, so racing
processes start together however long each took to start), then dispatches with batch size
argv[2] until a pass finds nothing due (or, with argv[3] "beat", runs one beat pass), and
prints its stats as JSON."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.reminders.dispatch_settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from reminders.dispatch import (  # noqa: E402
    DispatchStats,
    reminders_dispatch,
    reminders_dispatch_window,
)


def main() -> None:
    """Dispatch until nothing is left for this process."""
    go, batch = Path(sys.argv[1]), int(sys.argv[2])
    connection.ensure_connection()
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    if sys.argv[3:] == ["beat"]:
        print(json.dumps(asdict(reminders_dispatch_window())), flush=True)
        return
    total = DispatchStats()
    while True:
        stats = reminders_dispatch(batch_size=batch, max_seconds=120)
        total.add(stats)
        if stats.batches == 0:
            break
    print(json.dumps(asdict(total)), flush=True)


if __name__ == "__main__":
    main()
