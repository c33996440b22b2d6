"""Schedules a user asks for in words: create one for an agent they may use (once per
request), change its text, words or agent, pause or resume it, delete it; their own only."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import time
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import translation
from django.utils.translation import gettext as _

from agents.models import Agent
from agents.selectors import agent_usable_by
from agents.tools.builtin import user_timezone
from config.errors import AppError
from reminders.models import ScheduledPrompt
from reminders.schedule_words import ScheduleReading, read_schedule
from reminders.services.schedules import scheduled_prompt_delete, scheduled_prompt_save

PROMPT_MAX_CHARS = 2000


@dataclass(frozen=True)
class ScheduleMade:
    """What asking for a schedule did: the row, whether this request created it (False: the
    same request made it before), and the time assumed when the words named none."""

    scheduled: ScheduledPrompt
    created: bool
    assumed: time | None = None


def schedule_reading(words: str) -> ScheduleReading:
    """The words read as a schedule; AppError "invalid" (with what to write instead) if not."""
    try:
        return read_schedule(words)
    except ValueError as exc:
        raise AppError("invalid", str(exc), details={"schedule": [str(exc)]}) from exc


def schedule_agent_check(*, agent: Agent, user: Any) -> None:
    """AppError "agent_forbidden" unless the agent is enabled and the user passes its rule."""
    if not agent.enabled or not agent_usable_by(agent=agent, user=user):
        name = agent.display_name or agent.name
        raise AppError(
            "agent_forbidden",
            _("You may not use %(agent)s, so it cannot work on a schedule for you.")
            % {"agent": name},
            details={"agent": [_("You may not use this agent.")]},
            status=403,
        )


def schedule_create(
    *,
    user: Any,
    agent: Agent,
    prompt: str,
    words: str,
    request_key: str = "",
    by_email: bool = False,
) -> ScheduleMade:
    """Create the user's schedule in their timezone: `agent` is sent `prompt` whenever `words`
    say. A `request_key` already used (the same chat message or call again) returns the
    schedule it made instead of a second one."""
    prompt = _prompt(prompt)
    reading = schedule_reading(words)
    schedule_agent_check(agent=agent, user=user)
    if request_key and (done := _made_by(user, request_key)):
        return ScheduleMade(done, created=False, assumed=reading.assumed)
    try:
        with transaction.atomic():
            scheduled = ScheduledPrompt(
                name=_name_for(user, prompt),
                user=user,
                agent=agent,
                prompt=prompt,
                request_key=request_key or None,
                language=translation.get_language() or "",
                by_email=by_email,
            )
            scheduled_prompt_save(
                scheduled=scheduled, when=reading.spec, zone=str(user_timezone(user))
            )
    except IntegrityError:  # the same request, at the same moment, in another worker
        done = _made_by(user, request_key) if request_key else None
        if done is None:
            raise
        return ScheduleMade(done, created=False, assumed=reading.assumed)
    return ScheduleMade(scheduled, created=True, assumed=reading.assumed)


def schedule_update(
    *,
    scheduled: ScheduledPrompt,
    prompt: str | None = None,
    words: str | None = None,
    agent: Agent | None = None,
    paused: bool | None = None,
    by_email: bool | None = None,
) -> ScheduledPrompt:
    """Change what the owner may change; words are read in the owner's timezone now."""
    reading = schedule_reading(words) if words is not None else None
    if agent is not None and agent.pk != scheduled.agent_id:
        schedule_agent_check(agent=agent, user=scheduled.user)
        scheduled.agent = agent
    if prompt is not None:
        scheduled.prompt = _prompt(prompt)
    if paused is not None:
        scheduled.enabled = not paused
    if by_email is not None:
        scheduled.by_email = by_email
    zone = str(user_timezone(scheduled.user))
    return scheduled_prompt_save(
        scheduled=scheduled, when=reading.spec if reading else None, zone=zone
    )


def schedule_delete(*, scheduled: ScheduledPrompt) -> None:
    """Delete the schedule and its beat entry (its chat session and answers stay)."""
    scheduled_prompt_delete(scheduled=scheduled)


def _prompt(prompt: str) -> str:
    text = " ".join(str(prompt or "").split())
    if not text:
        message = _("Say what the agent should do each time.")
        raise AppError("invalid", message, details={"text": [message]})
    if len(text) > PROMPT_MAX_CHARS:
        message = _("At most %(count)s characters.") % {"count": PROMPT_MAX_CHARS}
        raise AppError("invalid", message, details={"text": [message]})
    return text


def _name_for(user: Any, prompt: str) -> str:
    """A unique name for admin: the user and the prompt's start (numbered when taken)."""
    base = f"{user.get_username()}: {prompt}"[:180]
    name, number = base, 1
    while ScheduledPrompt.objects.filter(name=name).exists():
        number += 1
        name = f"{base} ({number})"
    return name


def _made_by(user: Any, request_key: str) -> ScheduledPrompt | None:
    return ScheduledPrompt.objects.filter(request_key=request_key, user=user).first()
