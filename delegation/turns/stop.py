"""Stopping a turn (its whole tree) and deleting a chat."""

from __future__ import annotations

from django.db import transaction

from chat.models import ChatSession
from delegation.models import Run
from delegation.runs.ending import run_stop
from delegation.turns.parked import session_turns


def turn_stop(*, run: Run) -> bool:
    """Stop a turn (or one expert's part of it) and everything below; False if already ended."""
    return run_stop(run=run)


@transaction.atomic
def session_delete(*, session: ChatSession) -> None:
    """Delete the session with its messages; its unfinished turns (working, or parked on a
    person) are stopped first."""
    turns = session_turns(session=session)
    for root in Run.objects.filter(pk__in=[*turns.running, *turns.parked]):
        run_stop(run=root)
    session.delete()
