"""A side-effect tool for tests: each call inserts one row into the test's own table
(`humans_test_effect`, created by the tests), so a test can count how often it really ran.

Celery workers of the distributed tests import it with `--include tests.humans.effect_tool`.
With HUMANS_TEST_PAUSE_FILE set, the first call creates that file and then sleeps inside its
transaction: a test waits for the file and SIGKILLs the worker there.
"""

from __future__ import annotations

import os
import time
from typing import Any

from django.db import connection

from agents.registry import ToolContext, get_tool, tool

TABLE = "humans_test_effect"
KEY = "record_effect"


def effect_table() -> None:
    """Create the table if it is missing (it outlives tests: rows carry a marker per test)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} (marker VARCHAR(100) NOT NULL, amount INTEGER)"
        )


def effect_count(marker: str) -> int:
    """How many times the tool ran for `marker` (committed rows)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {TABLE} WHERE marker = %s", [marker])
        return cursor.fetchone()[0]


def effect_amounts(marker: str) -> list[int]:
    """The amounts recorded for `marker`."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT amount FROM {TABLE} WHERE marker = %s", [marker])
        return [row[0] for row in cursor.fetchall()]


def _record(context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} (marker, amount) VALUES (%s, %s)",
            [arguments["marker"], arguments.get("amount", 1)],
        )
    pause = os.environ.get("HUMANS_TEST_PAUSE_FILE")
    if pause and not os.path.exists(pause):
        with open(pause, "w") as marker_file:
            marker_file.write(str(os.getpid()))
        time.sleep(120)  # the test SIGKILLs this process here, inside the transaction
    if arguments["marker"].startswith("fail"):
        raise RuntimeError("scripted failure after writing")
    amount = arguments.get("amount", 1)
    return {
        "status": "recorded",
        "message": f"Recorded {arguments['marker']} x{amount}.",
        "marker": arguments["marker"],
        "amount": amount,
    }


if get_tool(KEY) is None:
    tool(
        KEY,
        "Record a side effect (tests).",
        {
            "type": "object",
            "properties": {
                "marker": {"type": "string", "minLength": 1, "maxLength": 100},
                "amount": {"type": "integer", "minimum": 1, "maximum": 1000},
            },
            "required": ["marker"],
            "additionalProperties": False,
        },
        side_effect=True,
    )(_record)
