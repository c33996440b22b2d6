"""A test email backend that appends each mail's X-Reminder-Id to a file (one line per mail), so
several dispatcher processes can be counted; MAILBOX_DELAY_MS slows each send."""

from __future__ import annotations

import os
import time
from typing import Any

from django.core.mail.backends.base import BaseEmailBackend


class AppendBackend(BaseEmailBackend):
    """Appends `<reminder id>\\n` per message to $MAILBOX_PATH (O_APPEND keeps lines whole)."""

    def send_messages(self, email_messages: list[Any]) -> int:
        """Record each message."""
        delay = float(os.environ.get("MAILBOX_DELAY_MS", "0")) / 1000
        fd = os.open(os.environ["MAILBOX_PATH"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            for message in email_messages:
                if delay:
                    time.sleep(delay)
                os.write(fd, f"{message.extra_headers['X-Reminder-Id']}\n".encode())
        finally:
            os.close(fd)
        return len(email_messages)


def mailbox_ids(path: str) -> list[int]:
    """Every reminder id mailed so far, in order, repeats included."""
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [int(line) for line in handle.read().split()]
