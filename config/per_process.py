"""One object per process, made on first use and made again in a forked child: a worker's
background threads do not survive a fork, so a child must not reuse its parent's."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerProcess(Generic[T]):
    """Holds this process's `factory()` result (a sender, a renewing thread...)."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._value: T | None = None

    def get(self) -> T:
        """This process's object, made now if it has none yet."""
        value = self._value  # the common case without the lock: a stream asks at every piece
        if value is not None and self._pid == os.getpid():
            return value
        with self._lock:
            if self._value is None or self._pid != os.getpid():
                self._value = self._factory()
                self._pid = os.getpid()
            return self._value

    def current(self) -> T | None:
        """This process's object if it was made, else None (nothing started for nothing)."""
        return self._value if self._pid == os.getpid() else None
