"""Start-up objects kept out of the garbage collector's way, so that a full collection is short."""

from __future__ import annotations

import gc


def collector_freeze_startup() -> None:
    """Move every object alive now (modules, settings, compiled patterns, the SDK's classes) to
    the collector's permanent generation (`gc.freeze`): a full collection then scans only what
    the process made since. Call once a server or worker process has loaded its code.

    With 100 answers streaming through daphne, a full collection paused every thread for
    90–145 ms, two or three times a minute, which was most of the event lag's p99; with the
    start-up objects frozen it takes 20–30 ms (docs/decisions/0006-performance.md)."""
    gc.freeze()
