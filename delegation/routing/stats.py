"""Routing statistics, counted where each thing happens: a delegation's end, a guard's refusal,
a validator's verdict, a user's rating, the router's fallback. One upsert each, on the row of
(entry agent, expert, intent, day of the delegation); never a scan of history."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from chat.models import ChatMessage
from delegation.models import Run, RunStatus
from delegation.routing.models import NO_INTENT, RoutingStat

COUNTERS = (
    "delegations",
    "succeeded",
    "validation_passed",
    "validation_failed",
    "rated_up",
    "rated_down",
    "fell_back",
    "refused",
)
EVAL_FLAG = "eval"  # in a turn's routing request: an eval's turn, not counted
PIN = "routing_turn"  # what an expert's pinned config keeps of its turn: entry agent and intent
FAILOVER_STEPS = ("retry", "next_expert")  # an expert's invalid answer asked someone again


def intent_of(routing: dict[str, Any] | None) -> str:
    """The intent a turn's stored decision named ("none" when no intent rule decided)."""
    return (routing or {}).get("intent") or NO_INTENT


def day_of(moment: datetime) -> date:
    """The statistics' day of a moment (UTC, so every process and user agrees)."""
    return moment.astimezone(UTC).date()


def stat_bump(*, entry: str, expert: str, intent: str, day: date, **counts: int) -> None:
    """Add `counts` (counter name → amount, possibly negative) to the day's row, in one
    statement (INSERT … ON CONFLICT DO UPDATE: concurrent bumps add up, none is lost)."""
    counts = {name: amount for name, amount in counts.items() if amount}
    if not counts or not settings.ROUTING_STATS_ENABLED:
        return
    unknown = set(counts) - set(COUNTERS)
    if unknown:
        raise ValueError(f"unknown routing counters: {sorted(unknown)}")
    meta, quote = RoutingStat._meta, connection.ops.quote_name
    table = quote(meta.db_table)
    keys = ["entry", "expert", "intent", "day"]
    columns = [*keys, *COUNTERS]
    values: list[Any] = [entry[:100], expert[:100], intent[:100], day]
    values += [counts.get(c, 0) for c in COUNTERS]
    added = ", ".join(f"{quote(c)} = {table}.{quote(c)} + excluded.{quote(c)}" for c in counts)
    sql = (
        f"INSERT INTO {table} ({', '.join(quote(c) for c in columns)}) "
        f"VALUES ({', '.join(['%s'] * len(columns))}) "
        f"ON CONFLICT ({', '.join(quote(k) for k in keys)}) DO UPDATE SET {added}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, values)


def counted(root: Run) -> bool:
    """Whether a turn's delegations are counted: not an eval's (its sandbox turns would teach
    routing from test cases, and an eval comparing learning off and on would feed one side's
    outcomes to the other)."""
    return not (root.routing_request or {}).get(EVAL_FLAG)


def turn_pin(child: Run, calls_granted: int) -> dict[str, Any]:
    """The engine's `child_pins` hook: an expert's run keeps its turn's entry agent and intent,
    so its end is counted without reading the turn: from the turn's root when the root asks
    (loaded, as the caller), else as its caller keeps them (an eval's turn keeps none)."""
    caller = child.parent
    if caller is not None and caller.parent_id is not None:
        pinned = (caller.agent_config or {}).get(PIN)
        return {**child.agent_config, PIN: pinned} if pinned else child.agent_config
    root = caller if caller is not None else child
    if not counted(root):
        return child.agent_config
    return {**child.agent_config, PIN: {"entry": child.path[0], "intent": intent_of(root.routing)}}


def _turn_of(run: Run) -> tuple[str, str] | None:
    """(entry agent, intent) of an expert's run, from its pin; None for a run without one."""
    pinned = (run.agent_config or {}).get(PIN)
    if not isinstance(pinned, dict):
        return None
    return pinned.get("entry") or run.path[0], pinned.get("intent") or NO_INTENT


def delegation_counted(run: Run) -> None:
    """The engine's `run_finished` hook: an expert's run ended (its fenced end, written once):
    one delegation, whether it succeeded, whether its answer failed over to another attempt."""
    turn = _turn_of(run) if run.parent_id is not None else None
    if turn is None:
        return
    failover = (run.validation or {}).get("outcome") in FAILOVER_STEPS
    stat_bump(
        entry=turn[0],
        expert=run.agent_config["name"],
        intent=turn[1],
        day=day_of(run.created_at),
        delegations=1,
        succeeded=int(run.status == RunStatus.SUCCEEDED),
        fell_back=int(failover),
    )


def refusal_counted(caller: Run, target: str | None, code: str) -> None:
    """The engine's `delegation_refused` hook: the guards refused to ask `target`."""
    if not target or (caller.parent_id is None and not counted(caller)):
        return
    if caller.parent_id is not None and _turn_of(caller) is None:
        return
    entry, intent = (
        (caller.agent_config["name"], intent_of(caller.routing))
        if caller.parent_id is None
        else _turn_of(caller) or (caller.path[0], NO_INTENT)  # (pinned: checked above)
    )
    stat_bump(entry=entry, expert=target, intent=intent, day=day_of(caller.created_at), refused=1)


def verdict_counted(*, run: Run, valid: bool) -> None:
    """A validator's verdict on an expert's answer was created (once per verdict)."""
    turn = _turn_of(run) if run.parent_id is not None else None
    if turn is None:
        return
    stat_bump(
        entry=turn[0],
        expert=run.agent_config["name"],
        intent=turn[1],
        day=day_of(run.created_at),
        validation_passed=int(valid),
        validation_failed=int(not valid),
    )


def fallback_counted(*, run: Run, target: str | None) -> None:
    """The router failed on a turn and the keyword/tag fallback chose `target` (or nobody:
    counted against "self", the entry agent answering)."""
    if not counted(run):
        return
    stat_bump(
        entry=run.agent_config["name"],
        expert=target or "self",
        intent=intent_of(run.routing),
        day=day_of(run.created_at),
        fell_back=1,
    )


def rating_counted(message: ChatMessage, old: int | None, new: int | None) -> None:
    """chat.feedback's listener: a user's rating of an answer changed from `old` to `new`
    (None: none), in the rating's transaction; the expert who answered it moves from one
    count to the other. An expert's own message counts for that expert; the turn's answer
    for the expert routing asked first."""
    if old == new or message.run_id is None:
        return
    run = (
        Run.objects.filter(pk=message.run_id)
        .only("parent_id", "path", "agent_config", "routing", "routing_request", "created_at")
        .first()
    )
    if run is None:
        return
    if run.parent_id is None:
        expert = (run.routing or {}).get("target") if counted(run) else None
        turn = (run.agent_config["name"], intent_of(run.routing)) if expert else None
    else:
        expert, turn = run.agent_config["name"], _turn_of(run)
    if turn is None or not expert:
        return
    changes = {"rated_up": 0, "rated_down": 0}
    for rating, sign in ((old, -1), (new, 1)):
        if rating is not None:
            changes["rated_up" if rating > 0 else "rated_down"] += sign
    stat_bump(entry=turn[0], expert=expert, intent=turn[1], day=day_of(run.created_at), **changes)


def stats_prune(*, keep_days: int) -> int:
    """Delete the rows of days older than `keep_days` (past every window that reads them); how
    many were deleted."""
    oldest = timezone.now().date() - timedelta(days=keep_days)
    deleted, _ = RoutingStat.objects.filter(day__lt=oldest).delete()
    return deleted
