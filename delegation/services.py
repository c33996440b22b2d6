"""Writes to runs: create, claim with a lease, save progress fenced by lease, finish, cancel."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from agents.knowledge.tools import knowledge_tool_keys_for
from agents.models import Agent
from agents.services import agent_snapshot
from config.db import row_or_none
from config.enqueue import enqueue
from config.db.prepared import PreparedInsert, PreparedLookup
from delegation.budget import budget_initial, turn_tokens
from delegation.ended import EndWatch
from delegation.fenced import (
    CLAIM,
    FINISH,
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


def run_enqueue(*, run_id: Any) -> bool:
    """Have a worker advance the run once the current transaction commits; True when this
    thread's task body runs it next itself (config.enqueue.keeping_next)."""
    return enqueue(ADVANCE_RUN, str(run_id))


@dataclass(frozen=True)
class Handed:
    """A run this thread's task body runs next, claimed by the commit that made it ready (a
    new expert, or a caller its expert's end resumed): its lease token, and the run itself as
    that commit left it when it was loaded with everything its steps use (`run`; else None:
    its claim reads it, without writing)."""

    token: uuid.UUID
    run: Run | None = None
    since: float = 0.0  # when that commit read it not ended (monotonic)


_handed = threading.local()


def _handed_over() -> dict[str, Handed]:
    """This thread's runs handed over, by run id."""
    runs = getattr(_handed, "runs", None)
    if runs is None:
        runs = _handed.runs = {}
    return runs


# What a run's steps use of its related rows, loaded with it by its claim.
STEPS_USE = ("user", "session", "agent")


def _loaded_for_steps(run: Run) -> bool:
    """Whether `run` in memory has everything its steps use (`with_what_steps_use`)."""
    related = [getattr(Run, name) for name in STEPS_USE]
    if run.root_id is not None:
        related.append(Run.root)
    return all(field.is_cached(run) for field in related)


def _ready(run: Run, *, worker: str) -> bool:
    """Enqueue `run` (in the current transaction); when this thread's task body runs it next,
    set it claimed for this worker, as its claim would (True: the caller writes it so), and
    keep it for that claim when it is complete in memory."""
    if not run_enqueue(run_id=run.pk):
        return False
    _take(run, worker=worker)
    whole = run if _loaded_for_steps(run) else None
    _handed_over()[str(run.pk)] = Handed(run.lease_token, whole, time.monotonic())
    return True


def _take(run: Run, *, worker: str) -> None:
    """Set `run` as a claim leaves it: running for `worker`, under a new lease token (so an
    earlier worker's writes are refused)."""
    run.status = RunStatus.RUNNING
    run.started_at = run.started_at or timezone.now()
    run.lease_expires_at = _lease()
    run.lease_token = uuid.uuid4()
    run.worker = worker[:200]


def run_hand_back(*, run_id: Any) -> None:
    """A run this thread claimed for itself in advance and will not run after all: back to
    the queue, unclaimed, so whoever its task is sent to takes it at once."""
    handed = _handed_over().pop(str(run_id), None)
    if handed is not None:
        HANDED_BACK.run(id=run_id, lease_token=handed.token, queued_at=timezone.now())


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
    worker: str,
) -> Run:
    """A child run of `caller` for its delegate call `call_id`: the target's definition (as
    the engine's hooks pin it), at most `max_steps` calls, within the root's deadline; its
    first model call was taken from the turn's budget with its delegation
    (`budget_take_delegation`). Enqueued: queued, or claimed already for `worker` (the worker
    starting it: this thread's) when this thread runs it next (`_ready`)."""
    child = _child(caller, target, call_id, prompt, reason, max_steps)
    child.reserved_call = 0
    _ready(child, worker=worker)
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


def _ledger_tokens(runs: QuerySet[Run]) -> QuerySet[Run]:
    """`runs` with the tokens of each one's turn (`ledger_tokens`), in the same statement: the
    budget's checks read them on the root in memory (`with_turn_tokens`)."""
    return runs.annotate(ledger_tokens=turn_tokens(Coalesce(OuterRef("root_id"), OuterRef("pk"))))


def with_turn_tokens(run: Run | None) -> Run | None:
    """`run`, read with `ledger_tokens`, with them as its turn's tokens on its root in memory
    (`Run.turn_tokens`, which the calls made from here count on)."""
    if run is not None:
        run.root_or_self.turn_tokens = run.ledger_tokens
    return run


def with_what_steps_use(runs: QuerySet[Run]) -> QuerySet[Run]:
    """`runs` with the rows their steps use (`STEPS_USE` and the root) and the tokens of their
    turn (`with_turn_tokens`), in the same statement."""
    return _ledger_tokens(runs.select_related(*STEPS_USE, "root").defer(*ROOT_UNREAD))


# The claim reads the run with everything its steps use (about 130 columns): compiled once;
# locked, or not (a run claimed in advance by this thread: `_ready`).
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


def run_claim(*, run_id: Any, worker: str = "") -> tuple[Run | None, float]:
    """Take the run for this worker: (run, 0), or (None, seconds to retry in) / (None, 0) if done.

    A duplicate delivery finds the run final or waiting (nothing to do) or leased by a live
    worker (retry once the lease could have expired). An expired lease means that worker died:
    take over, with a new lease token so the old worker's writes are refused. A run this
    thread claimed in advance (`_ready`) is taken as the commit that claimed it left it (or
    read, not written, when it was not loaded whole) while that claim holds.
    """
    handed_over = _handed_over()
    handed = handed_over.get(str(run_id))
    # (A task body runs one run at a time: anything else handed over is stale, left by a
    # transaction that rolled back after its run was handed over.)
    handed_over.clear()
    if handed is not None:
        if handed.run is not None and EndWatch(run_id, since=handed.since).ended():
            return None, 0.0  # stopped since it was handed over: whoever ended it closed it
        run = handed.run or with_turn_tokens(_HANDED.row(run_id))
        ours = run is not None and run.status == RunStatus.RUNNING
        if ours and run.lease_token == handed.token and _still_held(run):
            run.taken_over = False
            return run, 0.0
    now = timezone.now()
    with transaction.atomic():
        run = with_turn_tokens(_CLAIMABLE.row(run_id))
        if run is None or run.status in FINAL_STATUSES or run.status in WAIT_STATUSES:
            return None, 0.0
        if run.status == RunStatus.RUNNING and run.lease_expires_at and run.lease_expires_at > now:
            return None, (run.lease_expires_at - now).total_seconds() + 1
        # A run left `running` by a worker whose lease expired is taken over: that worker may
        # have sent events it never saved, so this delivery's event numbers skip ahead.
        run.taken_over = run.status == RunStatus.RUNNING
        if run.taken_over:
            logger.warning(
                "run %s taken over from worker %r: its lease expired at %s",
                run.pk,
                run.worker,
                run.lease_expires_at,
            )
        _take(run, worker=worker)
        # As save(update_fields=...) without its signals: nothing listens to a claim.
        if not CLAIM.save(run):  # as save(update_fields=...) says of a row gone meanwhile
            raise DatabaseError("Save with update_fields did not affect any rows.")
    return run, 0.0


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
    """`runs` with what each still waits for, read in the same statement: `person` (an inbox
    item pending) and `expert` (an expert working; `besides`: other than the expert of that
    key, one ending in this transaction)."""
    person = InboxItem.objects.filter(run_id=OuterRef("pk"), status=ItemStatus.PENDING)
    expert = Run.objects.filter(parent_id=OuterRef("pk")).exclude(status__in=FINAL_STATUSES)
    if besides is not None:
        expert = expert.exclude(pk=besides)
    return runs.annotate(person=Exists(person), expert=Exists(expert))


# The turn's counters on its root (delegation.budget, and the checks the turn is rated from);
# its tokens are its ledger's (`_ledger_tokens`).
COUNTERS = ("tree_model_calls", "tree_delegations", "tree_checks")


def _waits_for(runs: QuerySet[Run]) -> QuerySet[Run]:
    return with_waits(runs.only("pk"))


def _waits_and_counters(runs: QuerySet[Run]) -> QuerySet[Run]:
    """What each run waits for, with the turn's counters (its own, or its root's) and tokens."""
    counters = (*COUNTERS, *(f"root__{name}" for name in COUNTERS))
    return _ledger_tokens(with_waits(runs.select_related("root").only("pk", "root_id", *counters)))


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


def _wait_status(waits: Run | None) -> str | None:
    if waits is not None and waits.person:
        return RunStatus.WAITING_HUMAN
    return RunStatus.WAITING if waits is not None and waits.expert else None


def run_wait_status(*, run_id: Any) -> str | None:
    """What the run still waits for: `waiting_human` while an inbox item of it is pending,
    `waiting` while an expert of it works, None when nothing (it can go on)."""
    return _wait_status(_WAITS.row(run_id))


def run_wait_or_continue(*, run: Run) -> bool:
    """After starting delegations or asking a person: True if the run must wait (experts still
    working, or an inbox item pending), in which case it is saved as waiting without a worker;
    False if nothing is left to wait for (go on, nothing saved)."""
    with transaction.atomic(savepoint=False):  # (within a step that only asked experts)
        # The run's row lock, what it waits for and the turn's counters, in one statement.
        waits = _WAITS_LOCKED.row(run.pk)
        status = _wait_status(waits)
        if status is None:
            # Its experts may have ended meanwhile, after their checks and calls were counted
            # on the root: the run goes on with the counters as they are now.
            if waits is not None:
                counted = waits.root_or_self
                for name in COUNTERS:
                    setattr(run.root_or_self, name, getattr(counted, name))
                run.root_or_self.turn_tokens = waits.ledger_tokens
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


def run_resume_if_ready(*, run_id: Any, locked: Run | None = None, worker: str = "") -> bool:
    """Re-enqueue a waiting run once nothing is left to wait for (True), or move it between
    `waiting` and `waiting_human` as what it waits for changes. Call inside a transaction:
    the run's row lock makes the last of several concurrent ends resume it exactly once.

    `locked`: the run, already read with that lock in this transaction by `with_waits`, in
    the same statement as what it waits for. Nothing left to wait for, read then, is still
    true (only the run itself adds to what it waits for, and at worst it is resumed, finds its
    experts working and waits again); anything still waited for is read again after the
    lock, which sees whatever was committed while the lock was awaited. `worker`: the worker
    resuming it, which claims it at once when it runs it next (`_ready`).
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
    nothing_left = locked is not None and _wait_status(locked) is None
    status = None if nothing_left else run_wait_status(run_id=run.pk)
    if status is not None:
        if status != run.status:
            run.status = status
            WAITS_ON.save(run)
        return False
    run.queued_at, run.waiting_since = timezone.now(), None
    if _ready(run, worker=worker):
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
    *,
    run: Run,
    status: str,
    answer: str = "",
    error: dict[str, str] | None = None,
    fenced: bool = True,
) -> bool:
    """End a run; False if it had already ended (or, when fenced, is no longer this worker's).
    A run that answered under its own worker also saves the check of its answer and the turn's
    confidence (`validation`, `confidence`, `needs_review`: only its worker sets them)."""
    judged = fenced and status == RunStatus.SUCCEEDED
    ending = dict(
        status=status,
        answer=answer,
        citations=run.citations if status == RunStatus.SUCCEEDED else [],
        error=error,
        finished_at=timezone.now(),
    )
    if judged:
        ending |= dict(
            validation=run.validation, confidence=run.confidence, needs_review=run.needs_review
        )
    named = held(run) if fenced else {"id": run.pk}
    updated = FINISH[fenced, judged].run(**named, **working(run), **ending)
    for name, value in (ending | {"lease_expires_at": None}).items():
        setattr(run, name, value)
    return bool(updated)
