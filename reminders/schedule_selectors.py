"""Reads of scheduled prompts, scoped to one user: theirs, one by id, the agent words name,
and each as people read it (the schedule in words, the next run in their timezone)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import QuerySet
from django.utils.translation import gettext as _
from rest_framework.exceptions import NotFound

from agents.models import Agent
from agents.names import text_in
from agents.selectors import agents_usable_by
from config.text import simplified
from reminders.dates import when_said
from reminders.models import ScheduledPrompt
from reminders.schedule_words import CronSpec, describe_schedule
from reminders.slots import next_slot

# Words around an agent's name that are not the name: "the finance expert", "財務 Agent".
_NOT_NAME = re.compile(r"\b(?:the|agent|expert|team)\b|专家|团队|部门|agent", re.I)


def schedules_of(*, user: Any) -> QuerySet[ScheduledPrompt]:
    """The user's scheduled prompts, with what showing them reads."""
    return (
        ScheduledPrompt.objects.filter(user=user)
        .select_related("agent", "crontab")
        .order_by("created_at", "pk")
    )


def access_schedule(user: Any, schedule_id: int) -> ScheduledPrompt:
    """The user's own scheduled prompt; another user's id is answered like a missing one."""
    found = schedules_of(user=user).filter(pk=schedule_id).first()
    if found is None:
        raise NotFound(_("No such schedule."))
    return found


def schedule_spec(scheduled: ScheduledPrompt) -> CronSpec:
    """The schedule's crontab fields."""
    crontab = scheduled.crontab
    return CronSpec(
        minute=crontab.minute,
        hour=crontab.hour,
        day_of_week=crontab.day_of_week,
        day_of_month=crontab.day_of_month,
        month_of_year=crontab.month_of_year,
    )


def schedule_zone(scheduled: ScheduledPrompt) -> str:
    """The timezone its crontab runs in."""
    return str(scheduled.crontab.timezone)


def schedules_page(*, user: Any, zone: ZoneInfo, now: datetime) -> dict[str, Any]:
    """What the tasks page's schedules section shows: the user's schedules, and the agents
    they may choose when editing one."""
    agents = [
        {"name": a.name, "label": text_in(a.display_names, a.display_name)}
        for a in agents_usable_by(user=user)
    ]
    return {
        "schedules": [schedule_as_data(s, zone, now) for s in schedules_of(user=user)],
        "agents": agents,
    }


def schedule_next_run(scheduled: ScheduledPrompt, now: datetime) -> datetime | None:
    """When it runs next (None while paused, or when the crontab never comes due)."""
    if not scheduled.enabled:
        return None
    try:
        return next_slot(schedule_spec(scheduled), schedule_zone(scheduled), now)
    except ValueError:
        return None


def schedule_as_data(scheduled: ScheduledPrompt, zone: ZoneInfo, now: datetime) -> dict[str, Any]:
    """A schedule as the API, the tools and the tasks page show it; times in `zone` (the
    reader's), the schedule in words in the active language."""
    upcoming = schedule_next_run(scheduled, now)
    crontab_zone = schedule_zone(scheduled)
    return {
        "id": scheduled.pk,
        "text": scheduled.prompt,
        "agent": scheduled.agent.name,
        "agent_name": text_in(scheduled.agent.display_names, scheduled.agent.display_name),
        "schedule": describe_schedule(
            schedule_spec(scheduled), "" if crontab_zone == str(zone) else crontab_zone
        ),
        "next_run_at": upcoming.astimezone(zone).isoformat() if upcoming else None,
        "next_run": (
            when_said(upcoming.astimezone(zone), now.astimezone(zone).date()) if upcoming else ""
        ),
        "paused": not scheduled.enabled,
        "by_email": scheduled.by_email,
        "last_run_at": (
            scheduled.last_run_at.astimezone(zone).isoformat() if scheduled.last_run_at else None
        ),
        "last_run_late": scheduled.last_run_late,
        "last_error": scheduled.last_error,
    }


@dataclass(frozen=True)
class AgentMatch:
    """The agents words name: `exact` (a name said in full), else `similar` (a name that
    begins with the words, or words that begin with a name)."""

    exact: list[Agent] = field(default_factory=list)
    similar: list[Agent] = field(default_factory=list)


def agents_named(*, words: str) -> AgentMatch:
    """The enabled agents `words` name: by name, display name or a name per language, either
    Chinese script, without "agent"/"expert"/"專家" around it ("財務", "finance expert")."""
    said = _folded(words)
    if not said:
        return AgentMatch()
    exact, similar = [], []
    for agent in Agent.objects.filter(enabled=True).order_by("name"):
        names = {_folded(n) for n in _names(agent)} - {""}
        if said in names:
            exact.append(agent)
        elif any(n.startswith(said) or said.startswith(n) for n in names if len(n) >= 2):
            similar.append(agent)
    return AgentMatch(exact, similar)


def _names(agent: Agent) -> list[str]:
    names = agent.display_names if isinstance(agent.display_names, dict) else {}
    return [agent.name, agent.display_name, *(str(v) for v in names.values())]


def _folded(words: str) -> str:
    return re.sub(r"[\s\-_·.,，、]+", "", _NOT_NAME.sub(" ", simplified(words or "").casefold()))
