"""The engine's hooks: what the tree and the feature apps plug into a run's life, unimported.

The engine (delegation.runs, .tree, .steps) never imports the features above it (humans, evals)
nor, from runs/, the tree and routing: it calls what they registered here, in their
AppConfig.ready(). Each hook has a default that does nothing, so the engine runs alone (tests of
it, and a deployment without a feature). The import-linter contract "delegation: evals -> …"
in .importlinter holds the direction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db.models import Expression, Value

from delegation.models import Run

if TYPE_CHECKING:
    from delegation.runs.claim import HandOver


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


@dataclass
class Hooks:
    """Everything registered, each with its default."""

    # A run with a caller ended: report it to the caller (delegation.tree.report).
    report: Callable[[Run, HandOver | None], None] = _nothing
    # A turn's entry run succeeded, before it is reported done (routing: session memory).
    turn_succeeded: list[Callable[[Run], None]] = field(default_factory=list)
    # A run asked an expert: the asking run and the line that says so in its language, as the
    # page shows it (channels: show it in the chat the turn came from).
    expert_asked: list[Callable[[Run, str], None]] = field(default_factory=list)
    # A turn's entry run saved more of its streaming answer (every checkpoint, a few times a
    # second, on the keeper thread): the run and the text so far (channels: Slack shows it).
    answer_growing: list[Callable[[Run, str], None]] = field(default_factory=list)
    # A run now waits for a person: the run and its inbox item (channels: ask in the chat).
    person_waiting: list[Callable[[Run, Any], None]] = field(default_factory=list)
    # What a run's trace span shows of it as events, once it ended: (name, time in ns,
    # attributes) each (humans: the waits for a person, asked and decided).
    span_events: list[Callable[[Run], list[tuple[str, int, dict[str, Any]]]]] = field(
        default_factory=list
    )
    # A run's end was written (once: in the transaction of its fenced end, if one is open):
    # the run as it ended (routing: how the delegation went).
    run_finished: list[Callable[[Run], None]] = field(default_factory=list)
    # A delegate call was refused by the guards: the caller, the expert's name as asked (or
    # None), the refusal's code (routing: counted against that expert).
    delegation_refused: list[Callable[[Run, str | None, str], None]] = field(default_factory=list)
    # A turn's entry run ended, any way, after its `run.completed` (channels: deliver the answer).
    turn_ended: list[Callable[[Run], None]] = field(default_factory=list)
    # What a turn's `run.completed` event adds (routing: its mode).
    completed_data: list[Callable[[Run], dict[str, Any]]] = field(default_factory=list)
    # A new expert's run, before it is written: its config, as a feature pins it (evals'
    # drafts), given the model calls its delegation granted it.
    child_pins: list[Callable[[Run, int], dict[str, Any]]] = field(default_factory=list)
    # Whether a run waits for a person: an expression on the run's rows (`OuterRef("pk")`).
    person_waits: Callable[[], Expression] = lambda: Value(False)
    # One row of the activity log (humans): kind, run, summary, data.
    activity: Callable[..., None] = _nothing
    # Whether a run's agent has its answers checked (then its answer is not its end).
    answers_checked: Callable[[Run], bool] = lambda run: False
    # The checks an entry run's answer is rated from ((agent name, check) pairs).
    turn_checks: Callable[[Run], list[tuple[str, dict[str, Any]]]] = lambda run: []
    # Judge a run's answer before its end (run, emitter, answer, checks, hand_over keywords):
    # its check, a fallback, the turn's rating; sets `run.validation`.
    answer_judged: Callable[..., None] = _nothing
    # What a checked expert's result says to its caller's model (the result body, adjusted).
    checked_result: Callable[[Run, dict[str, Any]], dict[str, Any]] = lambda run, body: body
    # Whether a tool call waits for a person (a question, an approval), and that wait.
    person_wanted: Callable[[Run, str, dict[str, Any], str], bool] = lambda *args: False
    person_call: Callable[..., str | None] = _nothing


HOOKS = Hooks()


def hooks_register(**registered: Any) -> None:
    """Register hooks by name (`report=…`); a list hook gets each function added once."""
    for name, function in registered.items():
        current = getattr(HOOKS, name)  # AttributeError: no such hook
        if isinstance(current, list):
            if function not in current:
                current.append(function)
        else:
            setattr(HOOKS, name, function)


def child_config(child: Run, *, calls_granted: int) -> dict[str, Any]:
    """The config a new expert's run pins, after every registered child pin."""
    config = child.agent_config
    for pin in HOOKS.child_pins:
        child.agent_config = config = pin(child, calls_granted)
    return config


def turn_completed_data(run: Run) -> dict[str, Any]:
    """What a turn's `run.completed` event carries besides its status and usage."""
    data: dict[str, Any] = {}
    for extra in HOOKS.completed_data:
        data |= extra(run)
    return data
