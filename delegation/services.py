"""Writes to runs: create, claim with a lease, save progress fenced by lease, finish, cancel."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from types import MappingProxyType
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from agents.knowledge.tools import knowledge_tool_keys_for
from agents.models import Agent
from agents.services import agent_snapshot
from config.db import row_or_none
from config.db.prepared import PreparedInsert, PreparedLookup
from config.enqueue import enqueue
from delegation.budget import budget_initial
from delegation.ended import EndWatch
from delegation.fenced import (
    CLAIM,
    FINISH_ANY,
    FINISH_HELD,
    FINISH_JUDGED,
    HANDED_BACK,
    HEARTBEAT,
    PROGRESS,
    RELEASE,
    RESUMED,
    RESUMED_CLAIMED,
    WAIT,
    WAITS_ON,
    claimed,
    held,
    working,
)
from delegation.hooks import child_config
from delegation.humans.models import InboxItem, ItemStatus
from delegation.models import FINAL_STATUSES, WAIT_STATUSES, Run, RunStatus

logger = logging.getLogger(__name__)

ADVANCE_RUN = "delegation.advance_run"  # the Celery task (delegation.tasks), enqueued by name


def run_enqueue(*, run_id: Any) -> None:
    """Have a worker advance the run once the current transaction commits."""
    enqueue(ADVANCE_RUN, str(run_id))


NONE_ENDED: Mapping[str, Run] = MappingProxyType({})


@dataclass(frozen=True)
class Handed:
    """A run a task body runs next itself, claimed for it by the commit that made it ready (a
    new expert, or a caller its expert's end resumed): its lease token, the run itself as that
    commit left it when it was loaded with everything its steps use (`run`; else None: its
    claim reads it, without writing), when that commit read it not ended (monotonic), and the
    expert whose end resumed it, by its call id (`experts_ended`: its result needs no read)."""

    run_id: Any
    token: uuid.UUID
    run: Run | None = None
    since: float = 0.0
    experts_ended: Mapping[str, Run] = field(default_factory=lambda: NONE_ENDED)


class HandOver:
    """One delivery's offer to run next, in the same task body, the first run it makes ready,
    without a queue round trip (`next`, once the transaction that made it ready commits).

    Handed work is committed but not published: if the process dies before running it, it is
    recovered as its row says (a run handed over claimed, by its expired lease). Further runs
    made ready go to the queue, and so does everything when the transaction that made the first
    ready rolled back (nothing is handed on then)."""

    def __init__(self, *, worker: str) -> None:
        self.worker = worker
        self.next: Handed | None = None
        self._offered = False

    def offer(self, run: Run, *, experts_ended: Mapping[str, Run] = NONE_ENDED) -> bool:
        """In the transaction that makes `run` ready: when it is the delivery's first, set it
        claimed for this worker, as its claim would (True: the caller writes it so)."""
        if self._offered:
            return False
        self._offered = True
        _take(run, worker=self.worker)
        whole = run if _loaded_for_steps(run) else None
        handed = Handed(run.pk, run.lease_token, whole, time.monotonic(), experts_ended)
        transaction.on_commit(partial(self._hand_on, handed))
        return True

    def _hand_on(self, handed: Handed) -> None:
        self.next = handed


# What a run's steps use of its related rows, loaded with it by its claim.
STEPS_USE = ("user", "session", "agent")


def _loaded_for_steps(run: Run) -> bool:
    """Whether `run` in memory has everything its steps use (`with_what_steps_use`)."""
    related = [getattr(Run, name) for name in STEPS_USE]
    if run.root_id is not None:
        related.append(Run.root)
    return all(field.is_cached(run) for field in related)


def _ready(
    run: Run, hand_over: HandOver | None, *, experts_ended: Mapping[str, Run] = NONE_ENDED
) -> bool:
    """Make `run` ready to advance (in the current transaction): handed over to this task
    body, claimed (True: the caller writes it so), or enqueued."""
    if hand_over is not None and hand_over.offer(run, experts_ended=experts_ended):
        return True
    run_enqueue(run_id=run.pk)
    return False


def _take(run: Run, *, worker: str) -> None:
    """Set `run` as a claim leaves it: running for `worker`, under a new lease token (so an
    earlier worker's writes are refused)."""
    run.status = RunStatus.RUNNING
    run.started_at = run.started_at or timezone.now()
    run.lease_expires_at = _lease()
    run.lease_token = uuid.uuid4()
    run.worker = worker[:200]


def run_hand_back(*, handed: Handed) -> None:
    """A run handed over to this task body that it will not run after all: back to the queue,
    unclaimed, so whoever its task is sent to takes it at once."""
    HANDED_BACK.run(id=handed.run_id, lease_token=handed.token, queued_at=timezone.now())
    run_enqueue(run_id=handed.run_id)


class RunStopped(Exception):
    """The run was cancelled, ended or taken over elsewhere: this worker must stop on it."""


def pinned_config(agent: Agent) -> dict[str, Any]:
    """The agent's definition as the run will use it: linked knowledge adds the kb tools."""
    config = agent_snapshot(agent=agent)
    extra = [k for k in knowledge_tool_keys_for(agent) if k not in config["tool_keys"]]
    config["tool_keys"] = [*config["tool_keys"], *extra]
    return config


# Every turn's run and every expert's: compiled once per connection.
_NEW_RUN = PreparedInsert(Run)


def run_create(
    *,
    agent: Agent,
    user: Any,
    session: Any,
    task: str,
    transcript: list[dict[str, Any]],
    user_message: Any = None,
    routing_request: dict[str, bool] | None = None,
    language: str = "",
) -> Run:
    """A queued root run with the agent's definition pinned as it is now, and a fresh budget;
    `routing_request` holds the turn's routing flags (force_strict, force_guide, debug) and
    `language` the one its messages are in."""
    now = timezone.now()
    return _NEW_RUN.insert(
        Run(
            session=session,
            user=user,
            agent=agent,
            agent_version=agent.version,
            agent_config=pinned_config(agent),
            user_message=user_message,
            routing_request=routing_request or {},
            depth=0,
            path=[agent.name],
            task=task,
            language=language,
            transcript=transcript,
            budget=budget_initial(),
            # Its first model call, taken from the turn's budget now (no statement later).
            tree_model_calls=1,
            reserved_call=0,
            deadline=now + timedelta(seconds=settings.RUN_DEADLINE_SECONDS),
            queued_at=now,
        )
    )


def run_start_child(
    *,
    caller: Run,
    target: Agent,
    call_id: str,
    prompt: str,
    reason: str,
    max_steps: int,
    hand_over: HandOver | None,
) -> Run:
    """A child run of `caller` for its delegate call `call_id`: the target's definition (as
    the engine's hooks pin it), at most `max_steps` calls, within the root's deadline; its
    first model call was taken from the turn's budget with its delegation
    (`budget_take_delegation`). Made ready: handed over claimed (`hand_over`), or queued."""
    child = _child(caller, target, call_id, prompt, reason, max_steps)
    child.reserved_call = 0
    _ready(child, hand_over)
    return _NEW_RUN.insert(child)


def _child(
    caller: Run, target: Agent, call_id: str, prompt: str, reason: str, max_steps: int
) -> Run:
    now = timezone.now()
    root = caller.root_or_self
    config = pinned_config(target)
    config["max_steps"] = max(1, min(config["max_steps"], max_steps))
    child = Run(
        session_id=caller.session_id,
        user=caller.user,  # loaded with the caller: later checks of the user cost no query
        agent=target,
        agent_version=target.version,
        agent_config=config,
        parent=caller,
        parent_tool_call_id=call_id,
        root=root,  # (the caller's, as loaded: a handed-over expert's steps read it)
        depth=caller.depth + 1,
        path=[*caller.path, target.name],
        task=prompt,
        language=caller.language,  # the user's language, whatever words the caller delegated in
        routing_reason=reason[:500],
        transcript=[{"role": "user", "content": prompt}],
        queued_at=now,
        deadline=min(root.deadline, now + timedelta(seconds=settings.CHILD_DEADLINE_SECONDS)),
    )
    if Run.session.is_cached(caller):
        child.session = caller.session
    child.agent_config = child_config(child, calls_granted=max_steps)
    return child


# What a run never reads of its root (which can be long: the root's own transcript).
ROOT_UNREAD = tuple(
    f"root__{name}"
    for name in ("transcript", "references", "citations", "answer", "task", "routing_request")
)


def with_what_steps_use(runs: QuerySet[Run]) -> QuerySet[Run]:
    """`runs` with the rows their steps use (`STEPS_USE` and the root), in the same statement."""
    return runs.select_related(*STEPS_USE, "root").defer(*ROOT_UNREAD)


# The claim reads the run with everything its steps use (about 130 columns): compiled once;
# locked, or not (a run handed over claimed already: `HandOver`).
_CLAIMABLE = PreparedLookup(
    lambda run_id: with_what_steps_use(
        Run.objects.select_for_update(of=("self",)).filter(pk=run_id)
    ),
    keys=[Run._meta.pk],
)
_HANDED = PreparedLookup(
    lambda run_id: with_what_steps_use(Run.objects.filter(pk=run_id)), keys=[Run._meta.pk]
)


def _lease() -> Any:
    return timezone.now() + timedelta(seconds=settings.RUN_LEASE_SECONDS)


@dataclass(frozen=True)
class Claimed:
    """A run this worker holds now, and how it came to: `taken_over` from a dead worker (which
    may have sent events it never saved, and made the call reserved for its step), and the
    experts whose end handed it over here, by call id (`experts_ended`: their results need no
    read)."""

    run: Run
    taken_over: bool = False
    experts_ended: Mapping[str, Run] = field(default_factory=lambda: NONE_ENDED)


def run_claim(
    *, run_id: Any, worker: str = "", handed: Handed | None = None
) -> tuple[Claimed | None, float]:
    """Take the run for this worker: (claimed, 0), or (None, seconds to retry in) / (None, 0)
    if there is nothing to do.

    A duplicate delivery finds the run final or waiting (nothing to do) or leased by a live
    worker (retry once the lease could have expired). An expired lease means that worker died:
    take over, with a new lease token so the old worker's writes are refused. A run `handed`
    over to this task body is taken as the commit that claimed it left it (or read, not
    written, when it was not loaded whole) while that claim holds.
    """
    if handed is not None and str(handed.run_id) == str(run_id):
        if handed.run is not None and EndWatch(run_id, since=handed.since).ended():
            return None, 0.0  # stopped since it was handed over: whoever ended it closed it
        run = handed.run or _HANDED.row(run_id)
        ours = run is not None and run.status == RunStatus.RUNNING
        if ours and run.lease_token == handed.token and _still_held(run):
            return Claimed(run, experts_ended=handed.experts_ended), 0.0
    now = timezone.now()
    with transaction.atomic():
        run = _CLAIMABLE.row(run_id)
        if run is None or run.status in FINAL_STATUSES or run.status in WAIT_STATUSES:
            return None, 0.0
        if run.status == RunStatus.RUNNING and run.lease_expires_at and run.lease_expires_at > now:
            return None, (run.lease_expires_at - now).total_seconds() + 1
        # A run left `running` by a worker whose lease expired is taken over: that worker may
        # have sent events it never saved (this delivery's event numbers skip ahead), and made
        # the call reserved for its step (this delivery takes its own).
        taken_over = run.status == RunStatus.RUNNING
        if taken_over:
            logger.warning(
                "run %s taken over from worker %r: its lease expired at %s",
                run.pk,
                run.worker,
                run.lease_expires_at,
            )
            run.reserved_call = None  # (saved with the run's next write)
        _take(run, worker=worker)
        # As save(update_fields=...) without its signals: nothing listens to a claim.
        if not CLAIM.save(run):  # as save(update_fields=...) says of a row gone meanwhile
            raise DatabaseError("Save with update_fields did not affect any rows.")
    return Claimed(run, taken_over=taken_over), 0.0


def _still_held(run: Run) -> bool:
    """Whether a run claimed in advance is still this worker's to run: its lease has over
    half its length left (none can take it over before the lease keeper renews it), or is
    renewed now, fenced (kept a while, behind a slow tool: whoever took it over since wins)."""
    left = (run.lease_expires_at - timezone.now()).total_seconds()
    if left > settings.RUN_LEASE_SECONDS / 2:
        return True
    run.lease_expires_at = _lease()
    return bool(
        HEARTBEAT.run(**held(run), lease_expires_at=run.lease_expires_at, last_seq=run.last_seq)
    )


def run_heartbeat(*, run: Run, seq: int | None = None) -> None:
    """Renew the lease (and save the last event number sent, never lowering it: a stream's
    checkpoint can land after its step's own save); RunStopped if not ours."""
    if not HEARTBEAT.run(**held(run), lease_expires_at=_lease(), last_seq=seq or 0):
        raise RunStopped


def run_save_progress(*, run: Run) -> None:
    """Persist transcript, steps, usage and seq and renew the lease; RunStopped if not ours."""
    values = dict(routing=run.routing, lease_expires_at=_lease())
    if not PROGRESS.run(**held(run), **working(run), **values):
        raise RunStopped


def with_waits(runs: QuerySet[Run], *, besides: Any = None) -> QuerySet[Run]:
    """`runs` with what each still waits for, read in the same statement (`waits_of` reads it
    back): `person` (an inbox item pending) and `expert` (an expert working; `besides`: other
    than the expert of that key, one ending in this transaction)."""
    person = InboxItem.objects.filter(run_id=OuterRef("pk"), status=ItemStatus.PENDING)
    expert = Run.objects.filter(parent_id=OuterRef("pk")).exclude(status__in=FINAL_STATUSES)
    if besides is not None:
        expert = expert.exclude(pk=besides)
    return runs.annotate(person=Exists(person), expert=Exists(expert))


@dataclass(frozen=True)
class Waits:
    """What a run still waits for: a person (an inbox item pending), an expert working."""

    person: bool
    expert: bool

    def status(self) -> str | None:
        """`waiting_human`, `waiting`, or None when nothing is left to wait for."""
        if self.person:
            return RunStatus.WAITING_HUMAN
        return RunStatus.WAITING if self.expert else None


def waits_of(row: Run) -> Waits:
    """What a run read `with_waits` waits for."""
    return Waits(person=row.person, expert=row.expert)


# The turn's counters on its root, refreshed in memory when a run goes on after its experts
# ended (the checks its answer is rated from: delegation.humans.reviews).
COUNTERS = ("tree_model_calls", "tree_delegations", "tree_checks")


def _waits_for(runs: QuerySet[Run]) -> QuerySet[Run]:
    return with_waits(runs.only("pk"))


def _waits_and_counters(runs: QuerySet[Run]) -> QuerySet[Run]:
    """What each run waits for, with the turn's counters (its own, or its root's)."""
    counters = (*COUNTERS, *(f"root__{name}" for name in COUNTERS))
    return with_waits(runs.select_related("root").only("pk", "root_id", *counters))


# What a run waits for, read at each of its steps that asked (and, locked, before it waits):
# compiled once per connection.
_WAITS = PreparedLookup(
    lambda run_id: _waits_for(Run.objects.filter(pk=run_id)), keys=[Run._meta.pk]
)
_WAITS_LOCKED = PreparedLookup(
    lambda run_id: _waits_and_counters(
        Run.objects.select_for_update(of=("self",)).filter(pk=run_id)
    ),
    keys=[Run._meta.pk],
)


def run_wait_status(*, run_id: Any) -> str | None:
    """What the run still waits for: `waiting_human` while an inbox item of it is pending,
    `waiting` while an expert of it works, None when nothing (it can go on, or is gone)."""
    row = _WAITS.row(run_id)
    return None if row is None else waits_of(row).status()


def run_wait_or_continue(*, run: Run) -> bool:
    """After starting delegations or asking a person: True if the run must wait (experts still
    working, or an inbox item pending), in which case it is saved as waiting without a worker;
    False if nothing is left to wait for (go on, nothing saved)."""
    with transaction.atomic(savepoint=False):  # (within a step that only asked experts)
        # The run's row lock, what it waits for and the turn's counters, in one statement.
        row = _WAITS_LOCKED.row(run.pk)
        status = None if row is None else waits_of(row).status()
        if status is None:
            # Its experts may have ended meanwhile, after their checks and calls were counted
            # on the root: the run goes on with the counters as they are now.
            if row is not None:
                counted = row.root_or_self
                for name in COUNTERS:
                    setattr(run.root_or_self, name, getattr(counted, name))
            return False
        run_wait(run=run, status=status)
    return True


def run_wait(*, run: Run, status: str = RunStatus.WAITING) -> None:
    """Save the run as waiting (`status`) without a worker, fenced by its lease (RunStopped if
    not ours), with no read of what it waits for: for a step whose experts started in its own
    uncommitted transaction, which none of them can have ended."""
    values = dict(status=status, waiting_since=timezone.now())
    if not WAIT.run(**held(run), **working(run), **values):
        raise RunStopped


def run_resume_if_ready(
    *,
    run_id: Any,
    locked: Run | None = None,
    waits: Waits | None = None,
    hand_over: HandOver | None = None,
    experts_ended: Mapping[str, Run] = NONE_ENDED,
) -> bool:
    """Re-enqueue a waiting run once nothing is left to wait for (True), or move it between
    `waiting` and `waiting_human` as what it waits for changes. Call inside a transaction:
    the run's row lock makes the last of several concurrent ends resume it exactly once.

    `locked`: the run, already read with that lock in this transaction, and `waits`, what it
    waited for as that statement read it (`with_waits`). Nothing left to wait for, read then,
    is still true (only the run itself adds to what it waits for, and at worst it is resumed,
    finds its experts working and waits again); anything still waited for is read again after
    the lock, which sees whatever was committed while the lock was awaited. `hand_over`: the
    task body that may run it next, claimed at once (`_ready`), with `experts_ended`, the
    expert whose end resumes it.
    """
    run = (
        locked
        if locked is not None
        else row_or_none(Run.objects.select_for_update().filter(pk=run_id))
    )
    if run is None or run.status not in WAIT_STATUSES:
        return False  # still running (it will see the change itself), or ended
    # "Nothing left", read with the lock, holds; anything else is read now, after the lock (a
    # change committed while it was awaited, a sibling stopped or a person's answer, is only
    # seen by a statement after it).
    nothing_left = waits is not None and waits.status() is None
    status = None if nothing_left else run_wait_status(run_id=run.pk)
    if status is not None:
        if status != run.status:
            run.status = status
            WAITS_ON.save(run)
        return False
    run.queued_at, run.waiting_since = timezone.now(), None
    if _ready(run, hand_over, experts_ended=experts_ended):
        RESUMED_CLAIMED.run(
            id=run.pk,
            **claimed(run),
            queued_at=run.queued_at,
            waiting_since=None,
        )
    else:
        RESUMED.run(id=run.pk, queued_at=run.queued_at)
    return True


def run_release(*, run: Run) -> None:
    """Hand a running run back to the queue (its task re-enqueues it to continue)."""
    if not RELEASE.run(**held(run), **working(run), queued_at=timezone.now()):
        raise RunStopped


def run_finish(
    *, run: Run, status: str, answer: str = "", error: dict[str, str] | None = None
) -> bool:
    """End a run by its own worker, fenced by its lease; False if it is no longer this
    worker's (or had ended). A run that answered also saves the check of its answer and the
    turn's confidence (`validation`, `confidence`, `needs_review`: only its worker sets them)."""
    ending = _ending(run, status, answer, error)
    if status == RunStatus.SUCCEEDED:
        judged = dict(
            validation=run.validation, confidence=run.confidence, needs_review=run.needs_review
        )
        updated = FINISH_JUDGED.run(**held(run), **working(run), **ending, **judged)
    else:
        updated = FINISH_HELD.run(**held(run), **working(run), **ending)
    return _ended(run, ending, updated)


def run_finish_elsewhere(*, run: Run, status: str, error: dict[str, str] | None = None) -> bool:
    """End a run from outside its worker (a stop, the sweeper, a watchdog), whoever holds it;
    False if it had already ended."""
    ending = _ending(run, status, "", error)
    return _ended(run, ending, FINISH_ANY.run(id=run.pk, **working(run), **ending))


def _ending(run: Run, status: str, answer: str, error: dict[str, str] | None) -> dict[str, Any]:
    return dict(
        status=status,
        answer=answer,
        citations=run.citations if status == RunStatus.SUCCEEDED else [],
        error=error,
        finished_at=timezone.now(),
    )


def _ended(run: Run, ending: dict[str, Any], updated: int) -> bool:
    """The ending as `run` in memory now holds it; whether the row took it."""
    for name, value in (ending | {"lease_expires_at": None}).items():
        setattr(run, name, value)
    return bool(updated)
