"""Stopping a turn (its whole tree) and deleting a chat."""

from __future__ import annotations

from django.db import transaction

from chat.models import ChatSession
from delegation.models import Run
from delegation.runs.ending import run_stop
from delegation.selectors import session_active_run


def turn_stop(*, run: Run) -> bool:
    """Stop a turn (or one expert's part of it) and everything below; False if already ended."""
    return run_stop(run=run)


@transaction.atomic
def session_delete(*, session: ChatSession) -> None:
    """Delete the session with its messages; a turn still running in it is stopped first."""
    active = session_active_run(session=session)
    if active is not None:
        run_stop(run=active)
    session.delete()
