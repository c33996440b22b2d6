"""Writes of evals: suites and cases (checked by one rule set for admin and API), starting and
cancelling eval runs. Running them is delegation.evals.stepper; the gate is .gate."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from agents.models import AgentRevision
from config.enqueue import enqueue
from config.errors import AppError
from delegation.evals.expectations import (
    expectations_clean,
    flags_clean,
    permissions_clean,
    prior_turns_clean,
    timezone_clean,
)
from delegation.evals.models import (
    AgentDraft,
    CaseStatus,
    EvalCase,
    EvalCaseResult,
    EvalRun,
    EvalRunStatus,
    EvalSuite,
    Trigger,
)
from delegation.evals.overrides import LEARNING, revision_config
from delegation.evals.targets import CURRENT, learning_target, model_label
from delegation.routing.models import Learning

ADVANCE = "evals.advance_run"  # the Celery task (delegation.evals.tasks), enqueued by name
CASE_FIELDS = [
    "suite",
    "name",
    "order",
    "enabled",
    "message",
    "prior_turns",
    "flags",
    "user_groups",
    "user_permissions",
    "user_timezone",
    "expect",
]
SUITE_FIELDS = [
    "name",
    "description",
    "agent",
    "pass_threshold",
    "publish_gate",
    "gate_agents",
    "judge_model",
    "case_timeout",
]


def case_clean(data: dict[str, Any]) -> dict[str, Any]:
    """The case fields in stored form; ValidationError keyed by field (expectations by their
    own key) for anything a case may not hold."""
    cleaned = dict(data)
    errors: dict[str, Any] = {}
    checks = {
        "prior_turns": prior_turns_clean,
        "flags": flags_clean,
        "user_permissions": permissions_clean,
        "user_timezone": timezone_clean,
        "expect": expectations_clean,
    }
    for field, clean in checks.items():
        if field in data:
            try:
                cleaned[field] = clean(data[field])
            except ValidationError as exc:
                errors = exc.update_error_dict(errors)
    message = data.get("message")
    if message is not None:
        problem = _message_problem(message)
        if problem:
            errors.setdefault("message", []).append(problem)
    if errors:
        raise ValidationError(errors)
    return cleaned


def _message_problem(message: str) -> str:
    text = message.strip()
    if not text:
        return "The message is empty."
    if "\x00" in text:
        return "The message contains a NUL character."
    if len(text) > settings.CHAT_MAX_MESSAGE_CHARS:
        return f"The message is over CHAT_MAX_MESSAGE_CHARS ({settings.CHAT_MAX_MESSAGE_CHARS})."
    return ""


@transaction.atomic
def case_save(*, case: EvalCase | None, data: dict[str, Any]) -> EvalCase:
    """Create (`case=None`) or change a case; fields `data` leaves out keep their value.
    Raises ValidationError keyed by field."""
    unknown = set(data) - set(CASE_FIELDS)
    if unknown:
        raise ValueError(f"not editable case fields: {sorted(unknown)}")
    cleaned = case_clean(data)
    case = case if case is not None else EvalCase()
    for field, value in cleaned.items():
        if field != "user_groups":
            setattr(case, field, value)
    case.full_clean()
    case.save()
    if "user_groups" in cleaned:
        case.user_groups.set(cleaned["user_groups"])
    return case


@transaction.atomic
def suite_save(*, suite: EvalSuite | None, data: dict[str, Any]) -> EvalSuite:
    """Create (`suite=None`) or change a suite; ValidationError keyed by field."""
    unknown = set(data) - set(SUITE_FIELDS)
    if unknown:
        raise ValueError(f"not editable suite fields: {sorted(unknown)}")
    suite = suite if suite is not None else EvalSuite()
    for field, value in data.items():
        if field != "gate_agents":
            setattr(suite, field, value)
    suite.full_clean()
    suite.save()
    if "gate_agents" in data:
        suite.gate_agents.set(data["gate_agents"])
    return suite


def case_as_run(case: EvalCase) -> dict[str, Any]:
    """The case as an eval run keeps it (later edits of the case do not change the run)."""
    return {
        "message": case.message,
        "prior_turns": case.prior_turns,
        "flags": case.flags,
        "user": {
            "groups": sorted(case.user_groups.values_list("name", flat=True)),
            "permissions": case.user_permissions,
            "timezone": case.user_timezone,
        },
        "expect": case.expect,
    }


@transaction.atomic
def eval_run_start(
    *,
    suite: EvalSuite,
    user: Any = None,
    trigger: str = Trigger.ADMIN,
    revision: AgentRevision | None = None,
    draft: AgentDraft | None = None,
    overrides: dict[str, Any] | None = None,
    target: str = "",
    model: str = "",
    learning: str = "",
    start: bool = True,
) -> EvalRun:
    """Queue a run of the suite's enabled cases against the live agents, one agent's
    `revision`, or the given `overrides` (a draft); with `model`, every run of each turn uses
    it ("offline": the built-in model); with `learning` (off, advisory, on), every turn is
    routed with it instead of its policy's. `start=False` leaves it for the caller to drive."""
    cases = list(suite.cases.filter(enabled=True).prefetch_related("user_groups"))
    if not cases:
        message = _("The suite %(suite)s has no enabled case.") % {"suite": suite.name}
        raise AppError("eval_suite_empty", message)
    overrides = dict(overrides or {})
    if revision is not None:
        overrides = {"agents": {revision.agent.name: revision_config(revision=revision)}}
        target = target or f"{revision.agent.name} v{revision.version}"
    if learning:
        if learning not in Learning.values:
            message = _("Routing learning is off, advisory or on, not %(value)s.") % {
                "value": learning
            }
            raise AppError("invalid", message, details={"learning": list(Learning.values)})
        overrides[LEARNING] = learning
        target = learning_target(target or CURRENT, learning)
    run = EvalRun.objects.create(
        suite=suite,
        trigger=trigger,
        draft=draft,
        overrides=overrides,
        model=model,
        target=f"{target or CURRENT}, {model_label(model)}"[:300],  # shown via target_text
        threshold=suite.pass_threshold,
        total=len(cases),
        created_by=user if getattr(user, "is_authenticated", False) else None,
        lease_expires_at=stale_after(),
    )
    EvalCaseResult.objects.bulk_create(
        [
            EvalCaseResult(
                eval_run=run, case=case, position=i, name=case.name, case_snapshot=case_as_run(case)
            )
            for i, case in enumerate(cases)
        ]
    )
    if start:
        enqueue(ADVANCE, str(run.pk))
    return run


def eval_run_kick(*, run: EvalRun) -> bool:
    """Re-send a run nobody is advancing (its task lost, its worker dead); True if sent."""
    if run.is_final and not run.results.filter(status=CaseStatus.RUNNING).exists():
        return False
    if run.lease_expires_at is not None and run.lease_expires_at > timezone.now():
        return False  # held by a live task, or one was sent recently
    enqueue(ADVANCE, str(run.pk))
    return True


def stale_after() -> Any:
    """When a run nobody has picked up by then counts as lost (EVALS_STALE_SECONDS)."""
    return timezone.now() + timedelta(seconds=settings.EVALS_STALE_SECONDS)


def eval_run_cancel(*, run: EvalRun) -> bool:
    """Stop a run: its current case's turn is stopped and the rest are not run; False if it
    had already ended."""
    stopped = EvalRun.objects.filter(
        pk=run.pk, status__in=[EvalRunStatus.QUEUED, EvalRunStatus.RUNNING]
    ).update(status=EvalRunStatus.CANCELLED, finished_at=timezone.now())
    if stopped:
        enqueue(ADVANCE, str(run.pk))  # whoever holds it, or a fresh task, cleans up
    return bool(stopped)


def groups_named(names: list[str]) -> list[Group]:
    """The groups with these names (a ValidationError names the missing ones)."""
    found = list(Group.objects.filter(name__in=names))
    missing = sorted(set(names) - {g.name for g in found})
    if missing:
        raise ValidationError({"user_groups": [f"No group named {', '.join(missing)}."]})
    return found
