"""The publish gate: a save of an agent that a gated suite covers is held as a draft while the
suite runs on it; it is published when every gated suite reaches its threshold, else it waits
for an admin to publish it anyway (recorded), fix it or discard it."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import pgettext_lazy

from agents.models import Agent
from agents.services import PublishHeld, agent_data_from_snapshot, agent_save, agent_snapshot
from config.errors import AppError
from delegation.evals.models import (
    AgentDraft,
    CaseStatus,
    DraftStatus,
    EvalRun,
    EvalSuite,
    PublishRecord,
    Trigger,
)
from delegation.evals.overrides import config_from_snapshot
from delegation.evals.services import eval_run_cancel, eval_run_start
from delegation.evals.targets import draft_target

logger = logging.getLogger(__name__)
OPEN = (DraftStatus.EVALUATING, DraftStatus.HELD)
# A draft's status as "This draft is …" says it (in English, the status itself).
STATUS_WORDS: dict[str, Promise] = {
    DraftStatus.EVALUATING: pgettext_lazy("draft status", "evaluating"),
    DraftStatus.HELD: pgettext_lazy("draft status", "held"),
    DraftStatus.PUBLISHED: pgettext_lazy("draft status", "published"),
    DraftStatus.DISCARDED: pgettext_lazy("draft status", "discarded"),
}


def suites_covering(*, agent: Agent) -> list[EvalSuite]:
    """The suites whose cases talk to `agent` or that gate its saves."""
    return list(
        EvalSuite.objects.filter(Q(agent=agent) | Q(gate_agents=agent)).distinct().order_by("name")
    )


def suites_gating(*, agent: Agent) -> list[EvalSuite]:
    """The gated suites a save of `agent` must pass (its own and those listing it)."""
    return list(
        EvalSuite.objects.filter(publish_gate=True, cases__enabled=True)
        .filter(Q(agent=agent) | Q(gate_agents=agent))
        .distinct()
        .order_by("name")
    )


def evals_publish_gate(*, agent: Agent, draft: dict[str, Any], user: Any, comment: str) -> None:
    """The gate agent_save calls: a change covered by gated suites becomes a draft and their
    runs start on it; PublishHeld says so. Unchanged definitions pass."""
    suites = suites_gating(agent=agent)
    if not suites:
        return
    live = Agent.objects.get(pk=agent.pk)
    if draft == agent_snapshot(agent=live):
        return
    _drafts_replace(live)
    record = AgentDraft.objects.create(
        agent=live,
        base_version=live.version,
        data=draft,
        comment=comment[:500],
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    overrides = {"agents": {live.name: config_from_snapshot(agent=live, snapshot=draft)}}
    runs = [
        eval_run_start(
            suite=suite,
            user=user,
            trigger=Trigger.GATE,
            draft=record,
            overrides=overrides,
            target=draft_target(live.name, live.version),
        )
        for suite in suites
    ]
    names = ", ".join(s.name for s in suites)
    raise PublishHeld(
        _(
            "Not published yet: saved as a draft while the eval suite(s) %(suites)s run on it. "
            "It is published if they pass; otherwise it waits for you to publish it anyway or "
            "fix it."
        )
        % {"suites": names},
        details={
            "draft_id": record.pk,
            "eval_runs": [str(r.pk) for r in runs],
            "suites": [s.name for s in suites],
        },
    )


def _drafts_replace(agent: Agent) -> None:
    """A new draft replaces the agent's open ones (their runs are cancelled)."""
    for old in AgentDraft.objects.filter(agent=agent, status__in=OPEN):
        for run in old.eval_runs.all():
            eval_run_cancel(run=run)
        old.status, old.note = DraftStatus.DISCARDED, "Replaced by a newer draft."
        old.decided_at = timezone.now()
        old.save(update_fields=["status", "note", "decided_at"])


def draft_summary(*, draft: AgentDraft) -> list[dict[str, Any]]:
    """Each gated run of the draft: suite, pass rate against threshold, failing cases."""
    rows = []
    for run in draft.eval_runs.select_related("suite").order_by("suite__name"):
        failing = [
            r.name
            for r in run.results.order_by("position")
            if r.status in (CaseStatus.FAILED, CaseStatus.ERROR)
        ]
        rows.append(
            {
                "suite": run.suite.name,
                "eval_run": str(run.pk),
                "status": run.status,
                "passed": run.passed,
                "total": run.total,
                "pass_rate": run.pass_rate,
                "threshold": run.threshold,
                "succeeded": run.succeeded,
                "failing": failing,
            }
        )
    return rows


def _summary_text(rows: list[dict[str, Any]]) -> str:
    return "; ".join(
        f"{r['suite']} {r['passed']}/{r['total']} (threshold {r['threshold']}%)" for r in rows
    )


def draft_decide(*, draft: AgentDraft) -> None:
    """Once every run of the draft has ended: publish it if all reached their threshold and
    the agent did not change meanwhile; else hold it for an admin."""
    draft.refresh_from_db()
    runs = list(draft.eval_runs.all())
    if draft.status != DraftStatus.EVALUATING or any(not r.is_final for r in runs):
        return
    if not all(r.succeeded for r in runs):
        _hold(draft, "Below the threshold: publish anyway, fix the draft or discard it.")
        return
    try:
        draft_publish(draft=draft, user=draft.created_by, override=False)
    except (AppError, ValidationError) as exc:
        _hold(draft, f"Passed, but could not be published: {_reason(exc)}")


def _reason(exc: Exception) -> str:
    if isinstance(exc, AppError):
        return exc.message
    if isinstance(exc, ValidationError) and hasattr(exc, "message_dict"):
        return "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
    return str(exc)


def _hold(draft: AgentDraft, note: str) -> None:
    AgentDraft.objects.filter(pk=draft.pk, status=DraftStatus.EVALUATING).update(
        status=DraftStatus.HELD, note=note[:500]
    )


@transaction.atomic
def draft_publish(
    *, draft: AgentDraft, user: Any, override: bool, reason: str = ""
) -> PublishRecord:
    """Publish the draft as the agent's next version, recording the eval result it was
    published with (`override`: an admin publishing it below the threshold, with `reason`).
    AppError if it is not open or the agent changed since it was drafted."""
    draft = AgentDraft.objects.select_for_update().get(pk=draft.pk)
    if draft.status not in OPEN:
        status = STATUS_WORDS.get(draft.status, draft.status)
        message = _("This draft is %(status)s; only an open draft is published.")
        raise AppError("invalid", message % {"status": status})
    agent = Agent.objects.select_for_update().get(pk=draft.agent_id)
    if agent.version != draft.base_version:
        raise AppError(
            "invalid",
            _(
                "%(agent)s changed since this draft was made (v%(base)s → v%(version)s): "
                "edit the draft again from the current version."
            )
            % {"agent": agent.name, "base": draft.base_version, "version": agent.version},
        )
    rows = draft_summary(draft=draft)
    passed = bool(rows) and all(r["succeeded"] for r in rows)
    if override and passed:
        override = False  # nothing to override
    who = getattr(user, "get_username", lambda: "")() or "the gate"
    words = (
        f"published anyway by {who} over failing evals: {_summary_text(rows)}"
        + (f" ({reason.strip()})" if reason.strip() else "")
        if override
        else f"published after evals: {_summary_text(rows)}"
    )
    comment = f"{draft.comment} · {words}" if draft.comment else words.capitalize()
    data = agent_data_from_snapshot(snapshot=draft.data, agent=agent)
    agent = agent_save(agent=agent, data=data, user=user, comment=comment, gated=False)
    record = PublishRecord.objects.create(
        revision=agent.revisions.get(version=agent.version),
        draft=draft,
        passed=passed,
        override=override,
        override_reason=reason.strip() if override else "",
        result={"suites": rows},
    )
    draft.status, draft.published_version = DraftStatus.PUBLISHED, agent.version
    draft.decided_by = user if getattr(user, "is_authenticated", False) else None
    draft.decided_at = timezone.now()
    draft.override_reason = record.override_reason
    draft.save()
    return record


@transaction.atomic
def draft_discard(*, draft: AgentDraft, user: Any) -> None:
    """Drop an open draft (its runs are cancelled); the live agent stays as it is."""
    draft = AgentDraft.objects.select_for_update().get(pk=draft.pk)
    if draft.status not in OPEN:
        status = STATUS_WORDS.get(draft.status, draft.status)
        message = _("This draft is %(status)s; only an open draft is discarded.")
        raise AppError("invalid", message % {"status": status})
    for run in EvalRun.objects.filter(draft=draft):
        eval_run_cancel(run=run)
    draft.status, draft.note = DraftStatus.DISCARDED, "Discarded."
    draft.decided_by = user if getattr(user, "is_authenticated", False) else None
    draft.decided_at = timezone.now()
    draft.save()


def draft_apply(*, agent: Agent, draft: AgentDraft) -> Agent:
    """The agent with the draft's values set on it in memory (to edit the draft in the agent
    form); nothing is saved."""
    data = agent_data_from_snapshot(snapshot=draft.data, agent=agent)
    subagents = list(data.pop("allowed_subagents"))
    for field, value in data.items():
        setattr(agent, field, value)
    # The form reads sub-agents through the relation: serve it the draft's, not the saved ones.
    agent._prefetched_objects_cache = {
        "allowed_subagents": Agent.objects.filter(pk__in=[a.pk for a in subagents])
    }
    return agent
