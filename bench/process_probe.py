"""What a server process and its children use, read from /proc: memory (RSS and PSS), CPU
seconds and threads, sampled in the background while a bench runs."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (a prefork worker's pool children), those still alive."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo += [int(child) for child in (task / "children").read_text().split()]
            except OSError:
                continue
    return found


def _kb(path: Path, field: str) -> int:
    """A "Field:   123 kB" line of a /proc status-like file, in kB (0 if gone)."""
    try:
        for line in path.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass
class Usage:
    """A process tree's memory in MB (RSS counts pages shared by forked children once per
    child; PSS shares them out), its CPU seconds so far and its threads."""

    rss: float
    pss: float
    cpu: float
    threads: int


def usage(pid: int) -> Usage:
    """The tree under `pid` now."""
    rss = pss = threads = 0
    cpu = 0.0
    for member in process_tree(pid):
        proc = Path(f"/proc/{member}")
        rss += _kb(proc / "status", "VmRSS")
        pss += _kb(proc / "smaps_rollup", "Pss")
        threads += _kb(proc / "status", "Threads")
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime
        except (OSError, IndexError):
            continue
    return Usage(rss / 1024, pss / 1024, cpu, threads)


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """CPU seconds (user + system) each of these processes used so far (those still alive)."""
    spent = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        spent[pid] = (int(fields[11]) + int(fields[12])) / TICKS
    return spent


class Peaks:
    """Samples `pid`'s tree (and `extra()`, e.g. database connections) every `interval` s in a
    thread until stopped; keeps the highest of each."""

    def __init__(self, pid: int, extra: Callable[[], int], interval: float = 0.2) -> None:
        self.pid, self.extra, self.interval = pid, extra, interval
        self.rss = self.pss = 0.0
        self.threads = self.extra_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="bench-probe")

    def __enter__(self) -> Peaks:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _sample(self) -> None:
        now = usage(self.pid)
        self.rss, self.pss = max(self.rss, now.rss), max(self.pss, now.pss)
        self.threads = max(self.threads, now.threads)
        self.extra_peak = max(self.extra_peak, self.extra())

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()
