"""A turn's shared budget: delegations, model calls and wall clock, counted on the root run;
tokens, summed from the turn's ledger rows."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import F, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from config.db.prepared import PreparedLookup
from delegation.models import Run
from delegation.runs.create import budget_initial
from delegation.usage.models import UsageRecord


@dataclass(frozen=True)
class BudgetState:
    """What is left of a turn's budget."""

    delegations_left: int
    model_calls_left: int
    tokens_left: int
    max_model_calls: int

    def must_answer(self) -> bool:
        """Whether a run must answer with its next call (no tools): it is the turn's last, or
        tokens are spent. (Each caller above it has its answering call taken already: with
        the delegation it waits on, `budget_take_delegation`.)"""
        return self.model_calls_left <= 1 or self.tokens_left <= 0


def _left(root: Run, *, calls: int, tokens: int, delegations: int) -> BudgetState:
    """What the turn of `root` has left of its limits after what is counted."""
    limits = root.budget or budget_initial()
    return BudgetState(
        delegations_left=limits["max_delegations"] - delegations,
        model_calls_left=limits["max_model_calls"] - calls,
        tokens_left=limits["max_tokens"] - tokens,
        max_model_calls=limits["max_model_calls"],
    )


def turn_tokens(root: Any) -> Coalesce:
    """The tokens of the turn whose root run is `root` (an expression, such as `OuterRef`): the
    sum of its ledger rows, model calls and checks alike, as one subquery. Every model call
    writes its row in the commit that saves its step, so this is the whole count: there is no
    counter to keep in step with it, and a server that reports no usage is counted as the
    ledger estimates it."""
    rows = UsageRecord.objects.filter(root_id=root).order_by().values("root_id")
    return Coalesce(Subquery(rows.annotate(tokens=_row_tokens()).values("tokens")[:1]), Value(0))


def _row_tokens() -> Sum:
    """A ledger row's tokens as the turn counts them (prompt, cached included, and completion),
    summed; `_take_sql` writes the same sum in SQL."""
    return Sum(F("prompt_tokens") + F("completion_tokens"))


def budget_tokens_used(*, root_id: Any) -> int:
    """The tokens the turn of `root_id` has used (`turn_tokens`), read now."""
    return UsageRecord.objects.filter(root_id=root_id).aggregate(n=_row_tokens())["n"] or 0


def budget_state(*, root_id: Any) -> BudgetState:
    """Read the root's counters and the turn's tokens against its limits."""
    root = (
        Run.objects.only("budget", "tree_model_calls", "tree_delegations")
        .annotate(used=turn_tokens(OuterRef("pk")))
        .get(pk=root_id)
    )
    return _left(
        root,
        calls=root.tree_model_calls,
        tokens=root.used,
        delegations=root.tree_delegations,
    )


def budget_reserve_model_call(*, root_id: Any, limit: int) -> bool:
    """Take one model call from the turn if fewer than `limit` were made (atomic: parallel runs
    of the tree together never pass it); False when the turn has used them all."""
    return bool(
        Run.objects.filter(pk=root_id, tree_model_calls__lt=limit).update(
            tree_model_calls=F("tree_model_calls") + 1
        )
    )


def budget_take_model_call(*, root: Run) -> BudgetState | None:
    """Take one model call from the turn of `root` if any is left, in one statement (atomic:
    parallel runs of the tree together never pass the limit); what was left before it, or
    None when the turn has used them all. The limits are the root's, fixed for the turn."""
    limits = root.budget or budget_initial()
    calls = _column("tree_model_calls")
    row = _take(root, f"{calls} = {calls} + 1", f"{calls} < %s", [limits["max_model_calls"]])
    if row is None:
        return None
    made, used_tokens, delegated = row
    return _left(root, calls=made - 1, tokens=used_tokens, delegations=delegated)


def budget_take_tool_call(*, root: Run) -> bool:
    """Take one call of an outside tool (MCP, the web, mail) from the turn of `root`, in one
    statement; False when the turn has made all it may."""
    limit = (root.budget or {}).get("max_tool_calls", settings.TURN_MAX_TOOL_CALLS)
    taken = Run.objects.filter(pk=root.pk, tree_tool_calls__lt=limit).update(
        tree_tool_calls=F("tree_tool_calls") + 1
    )
    return taken == 1


def budget_take_delegation(
    *,
    caller: Run,
    root: Run,
    callers_next: bool | None = None,
) -> int | None:
    """Take one delegation from the turn of `root` for `caller`, with the model calls it needs,
    if the turn has them, in one statement; the model calls the expert may make, or None.

    The calls taken: the expert's first (`Run.reserved_call`) and, unless it is taken
    already (`callers_next`: by default, unless the caller's next step has its call), the
    caller's next call, the one that reads the experts' answers (set on `caller`, saved with
    its step). So every run waiting on an expert has its answering call taken, and the
    expert may use whatever the turn has left (its last call offers no tools)."""
    limits = root.budget or budget_initial()
    delegations, calls = _column("tree_delegations"), _column("tree_model_calls")
    if callers_next is None:
        callers_next = caller.reserved_call != caller.steps
    calls_taken = 2 if callers_next else 1
    counts = f"{delegations} = {delegations} + 1, {calls} = {calls} + {calls_taken}"
    condition = f"{delegations} < %s AND {calls} + %s <= %s"
    params: list[Any] = [limits["max_delegations"], calls_taken, limits["max_model_calls"]]
    row = _take(root, counts, condition, params)
    if row is None:
        return None
    if callers_next:
        caller.reserved_call = caller.steps
    return limits["max_model_calls"] - row[0] + 1  # (its first call is among those counted)


def budget_lock_turn(*, root_id: Any) -> None:
    """Lock the turn's root row until the transaction ends (Postgres; SQLite's writers queue
    for the whole database): for a transaction below the root that will lock it but not
    first (an expert's step that asks experts, a fallback attempt's start), so that its first
    lock is the root's, before the ledger's spend counters and any run below it."""
    if connection.features.has_select_for_update:
        Run.objects.select_for_update().filter(pk=root_id).values_list("pk").first()


def budget_reserved_call(*, run: Run) -> BudgetState | None:
    """The turn's budget for the run's model call at its current step when that call was
    taken already (`Run.reserved_call`: by its delegation, or by the take of an expert it
    waited on), read from the root's counters and the turn's ledger in one statement. None
    when no call is reserved for this step (a claim that takes a run over from a dead worker
    clears it: that worker may have made it): take one then."""
    if run.reserved_call != run.steps:
        return None
    root = _ROOT_COUNTS.row(run.root_id_or_self)
    return _left(
        root,
        calls=root.tree_model_calls - 1,  # (this call is among them: left before it)
        tokens=root.used,
        delegations=root.tree_delegations,
    )


# The root's limits and counters with the turn's tokens: compiled once per connection.
_ROOT_COUNTS = PreparedLookup(
    lambda root_id: (
        Run.objects.filter(pk=root_id)
        .only("budget", "tree_model_calls", "tree_delegations")
        .annotate(used=turn_tokens(OuterRef("pk")))
    ),
    keys=[Run._meta.pk],
)


def _column(name: str) -> str:
    return connection.ops.quote_name(Run._meta.get_field(name).column)


@functools.cache
def _take_sql(vendor: str, counts: str, condition: str) -> str:
    """The statement of `_take` (built once per database kind and condition): the turn's
    tokens are returned summed from its ledger as `turn_tokens` sums them (`_row_tokens`), by
    the root's id, in SQL (a correlated subquery in RETURNING)."""
    table = connection.ops.quote_name(Run._meta.db_table)
    ledger = connection.ops.quote_name(UsageRecord._meta.db_table)
    root, prompt, completion = (
        connection.ops.quote_name(UsageRecord._meta.get_field(name).column)
        for name in ("root", "prompt_tokens", "completion_tokens")
    )
    tokens = (
        f"(SELECT COALESCE(SUM({prompt} + {completion}), 0) FROM {ledger} "
        f"WHERE {ledger}.{root} = {table}.{_column('id')})"
    )
    returned = f"{_column('tree_model_calls')}, {tokens}, {_column('tree_delegations')}"
    return (
        f"UPDATE {table} SET {counts} "
        f"WHERE {_column('id')} = %s AND {condition} RETURNING {returned}"
    )


def _take(root: Run, counts: str, condition: str, params: list[Any]) -> tuple[int, ...] | None:
    """Count on the root run (`counts`: `column = column + 1`, …) where `condition` holds (its
    values in `params`); the root's model calls, the turn's tokens and the root's delegations
    after it, or None when the condition did not hold. UPDATE … RETURNING
    (SQLite 3.35+, Postgres) reserves and reads in one round trip, where the ORM's update()
    needs a second query to read."""
    key = Run._meta.pk.get_db_prep_value(root.pk, connection)
    with connection.cursor() as cursor:
        cursor.execute(_take_sql(connection.vendor, counts, condition), [key, *params])
        row = cursor.fetchone()
    return row
