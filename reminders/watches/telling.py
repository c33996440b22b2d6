"""What becomes of a check's finding: the entry agent's decision whom to tell (the user, staff
or both), unchanged findings suppressed, a cleared one noted, every outcome in the activity log."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agents.selectors import agent_entry_for
from config.errors import AppError
from delegation.humans.activity import activity_record
from delegation.humans.models import ActivityKind
from reminders.watches.findings import Finding
from reminders.watches.models import (
    CheckStatus,
    Notification,
    Route,
    Severity,
    WatchCheck,
    WatchState,
)
from reminders.watches.notify import notifications_place


@dataclass(frozen=True)
class Decision:
    """Whom the entry agent tells about a finding, and why (in words)."""

    user: bool
    staff: bool
    explanation: str
    agent: str


def finding_tell(*, check: WatchCheck, finding: Finding, now: datetime) -> None:
    """Decide and record what the finding becomes (call with the check locked, in a transaction):
    told, suppressed (the same key and content as the one last told), cleared (nothing found
    where something was), nothing, or muted (recorded, not told)."""
    state, _created = WatchState.objects.select_for_update().get_or_create(
        watch=check.watch, user=check.user
    )
    check.finding = finding.as_data()
    if not finding.found:
        if not state.active_key:
            outcome_record(check=check, status=CheckStatus.NOTHING)
            return
        state.active_key = state.active_digest = ""
        state.save(update_fields=["active_key", "active_digest"])
        outcome_record(check=check, status=CheckStatus.CLEARED)
        return
    if state.active_key == finding.key and state.active_digest == finding.digest:
        outcome_record(check=check, status=CheckStatus.SUPPRESSED)
        return
    state.active_key, state.active_digest = finding.key, finding.digest
    state.save(update_fields=["active_key", "active_digest"])
    if state.muted:
        outcome_record(check=check, status=CheckStatus.MUTED)
        return
    decision = entry_decision(check=check, finding=finding)
    recipients = ([check.user] if decision.user else []) + (
        staff_of(check=check) if decision.staff else []
    )
    notifications_place(check=check, finding=finding, recipients=recipients, now=now)
    outcome_record(check=check, status=CheckStatus.TOLD, explanation=decision.explanation)


def entry_decision(*, check: WatchCheck, finding: Finding) -> Decision:
    """The entry agent's choice of whom to tell, from the watch's route and the finding's
    severity (deterministic, explained: the same on the offline model and a real one)."""
    try:
        agent = agent_entry_for(user=check.user).name_in()
    except AppError:
        agent = _("The assistant")
    route = check.watch.route
    if route == Route.AUTO:
        route = Route.BOTH if finding.severity == Severity.CRITICAL else Route.USER
        why = _("the watch decides by severity, and this finding is %(severity)s") % {
            "severity": Severity(finding.severity).label.lower()
        }
    else:
        why = _("as the watch is set")
    user, staff = route in (Route.USER, Route.BOTH), route in (Route.STAFF, Route.BOTH)
    explanation = _("%(agent)s tells %(whom)s (%(why)s).") % {
        "agent": agent,
        "whom": _WHOM[Route(route)],
        "why": why,
    }
    return Decision(user=user, staff=staff, explanation=explanation, agent=agent)


def staff_of(*, check: WatchCheck) -> list[Any]:
    """The staff told about a finding: the watch's staff group, else every staff member."""
    users = get_user_model().objects.filter(is_active=True, is_staff=True)
    if check.watch.staff_group_id:
        users = users.filter(groups=check.watch.staff_group_id)
    return list(users.exclude(pk=check.user_id).order_by("pk"))


_WHOM = {
    Route.USER: gettext_lazy("the user"),
    Route.STAFF: gettext_lazy("staff"),
    Route.BOTH: gettext_lazy("the user and staff"),
}
_SUMMARIES = {
    CheckStatus.TOLD: "Watch “%(watch)s” told: %(title)s",
    CheckStatus.SUPPRESSED: "Watch “%(watch)s” unchanged, not repeated: %(title)s",
    CheckStatus.CLEARED: "Watch “%(watch)s” cleared: nothing found any more",
    CheckStatus.NOTHING: "Watch “%(watch)s” found nothing",
    CheckStatus.MUTED: "Watch “%(watch)s” muted by the user: %(title)s",
    CheckStatus.ERROR: "Watch “%(watch)s” check failed: %(error)s",
}


def outcome_record(
    *, check: WatchCheck, status: str, error: str = "", explanation: str = ""
) -> None:
    """Finish the check with this outcome and add its activity row (all but "nothing")."""
    check.status, check.error, check.explanation = status, error[:2000], explanation
    check.finished_at = timezone.now()
    check.save(update_fields=["status", "error", "explanation", "finding", "finished_at"])
    if status == CheckStatus.NOTHING:
        return
    finding = check.finding or {}
    summary = _SUMMARIES[CheckStatus(status)] % {
        "watch": check.watch.name,
        "title": finding.get("title", ""),
        "error": error,
    }
    activity_record(
        kind=ActivityKind.WATCH_FINDING,
        summary=summary,
        run=check.run,
        agent_name=check.watch.agent.name if check.run is None else "",
        data={
            "watch_id": check.watch_id,
            "check_id": check.pk,
            "user_id": check.user_id,
            "slot": check.slot,
            "late": check.late,
            "outcome": status,
            "finding": finding,
            "explanation": explanation,
            "error": error,
            "notified": list(
                Notification.objects.filter(check_row=check).values_list("user_id", flat=True)
            ),
        },
        group=check.watch.staff_group.name if check.watch.staff_group is not None else "",
    )
