"""Turns parked on a person: every unfinished run of the turn waits for staff (an approval or
a staff answer; or for experts that do), so the session is free for the user's next message.
A turn that asked the user a question (`ask_user`) is not parked: it waits for their answer."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from chat.models import ChatSession
from delegation.humans.models import Audience, InboxItem, ItemStatus
from delegation.models import FINAL_STATUSES, WAIT_STATUSES, Run, RunStatus
from delegation.selectors import session_snapshot


@dataclass(frozen=True)
class SessionTurns:
    """The session's unfinished turns (root run ids, oldest first): working (`asking` ones
    among them wait for the user's own answer), or parked on staff."""

    running: list[uuid.UUID] = field(default_factory=list)
    parked: list[uuid.UUID] = field(default_factory=list)
    asking: list[uuid.UUID] = field(default_factory=list)

    @property
    def active_run_id(self) -> uuid.UUID | None:
        """The newest turn that is not parked (the one a Stop button stops), or None."""
        return self.running[-1] if self.running else None


def is_parked(statuses: set[str]) -> bool:
    """Whether a turn whose unfinished runs have these statuses waits only for a person: none
    of them queued or running, and at least one waiting for a person (a run `waiting` for
    experts waits for them, and they, in the end, for that person)."""
    return RunStatus.WAITING_HUMAN in statuses and statuses <= set(WAIT_STATUSES)


def session_turns(*, session: ChatSession) -> SessionTurns:
    """The session's unfinished turns, each told working or parked, in one query."""
    rows = (
        Run.objects.filter(session=session)
        .exclude(status__in=FINAL_STATUSES)
        .values_list("id", "root_id", "status", "created_at")
        .order_by("created_at")
    )
    statuses: dict[uuid.UUID, set[str]] = defaultdict(set)
    roots: dict[uuid.UUID, object] = {}
    for run_id, root_id, status, created_at in rows:
        statuses[root_id or run_id].add(status)
        if root_id is None:
            roots[run_id] = created_at
    asking = _asking_the_user(session) if roots else set()
    turns = SessionTurns()
    for root_id in roots:  # (in the order the turns began)
        if root_id in asking:
            turns.running.append(root_id)
            turns.asking.append(root_id)
        elif is_parked(statuses[root_id]):
            turns.parked.append(root_id)
        else:
            turns.running.append(root_id)
    return turns


def _asking_the_user(session: ChatSession) -> set[uuid.UUID]:
    """The turns (root ids) with a question to the user pending."""
    rows = InboxItem.objects.filter(
        run__session=session, status=ItemStatus.PENDING, audience=Audience.USER
    ).values_list("run__root_id", "run_id")
    return {root_id or run_id for root_id, run_id in rows}


def session_snapshot_turns(
    *, session: ChatSession, run_ids: set[Any] | None = None
) -> dict[str, Any]:
    """`session.snapshot` with the session's turns told apart: `active_run_id` is the turn that
    works now (the one Stop stops; None when every unfinished turn is parked),
    `waiting_run_ids` the turns parked on a person, oldest first, and `turn_messages` the user
    message each shown turn answers ({root run id: message id}: a parked turn's late answer
    is tagged with its question)."""
    snapshot = session_snapshot(session=session, run_ids=run_ids)
    turns = session_turns(session=session)
    active = turns.active_run_id
    shown = {m["run_id"] for m in snapshot["messages"] if m.get("run_id")}
    roots = Run.objects.filter(pk__in=shown, parent__isnull=True, user_message__isnull=False)
    return {
        **snapshot,
        "active_run_id": str(active) if active else None,
        "waiting_run_ids": [str(root_id) for root_id in turns.parked],
        "turn_messages": {
            str(run_id): str(message_id)
            for run_id, message_id in roots.values_list("id", "user_message_id")
        },
    }
