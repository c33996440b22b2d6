"""The schedule_prompt tool: "every Monday at 9, have finance summarise last week's invoices"
becomes the user's scheduled prompt at once, confirmed in words with its next run and an undo."""

from __future__ import annotations

import hashlib
from typing import Any

from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agents.models import Agent
from agents.names import text_in
from agents.registry import ToolContext, tool
from agents.selectors import agent_usable_by, agents_usable_by
from agents.tool_questions import UserQuestion
from config.errors import AppError
from config.text import joined, sentences
from reminders.dates import when_said
from reminders.outcome import Outcome, error, need_confirmation, success
from reminders.schedule_selectors import (
    agents_named,
    schedule_as_data,
    schedule_next_run,
    schedule_spec,
)
from reminders.schedule_words import describe_schedule, read_schedule
from reminders.services.schedule_requests import ScheduleMade, schedule_create
from reminders.tools.common import UserClock, planner_tool, user_clock

UNDO = "undo"  # the key of a tool result that offers the user a button undoing what it did


@tool(
    "schedule_prompt",
    "Put work on a schedule for the user at once: the named agent is sent `text` whenever "
    "`when` says (every Monday at 9, 每週一早上, 每天早上九點, 每月1號, weekdays 08:30), in the "
    "user's timezone. Pass the words as the user said them; a part of the day without a time "
    "runs at its usual hour (morning 09:00), which the result states. The result's message "
    "confirms the schedule and its next run: tell the user; they can undo it there.",
    {
        "type": "object",
        "properties": {
            "agent": {
                "type": "string",
                "minLength": 1,
                "maxLength": 120,
                "description": "The agent to ask, as the user named it (finance, 財務, HR expert).",
            },
            "text": {
                "type": "string",
                "minLength": 1,
                "maxLength": 2000,
                "description": "What the agent is asked each time, in the user's words "
                "(生成週報告, summarise last week's invoices).",
            },
            "when": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "When it repeats, in words: every Monday at 9, 每週一早上, "
                "每天早上九點, 每月1號, weekdays 08:30, or a crontab expression.",
            },
            "by_email": {"type": "boolean", "description": "Also mail each answer to the user."},
        },
        "required": ["agent", "text", "when"],
        "additionalProperties": False,
    },
    side_effect=True,
    title=gettext_lazy("Put work on a schedule"),
)
def schedule_prompt(context: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Create the schedule (once per request) and confirm it, with an undo for the user."""
    result: dict[str, Any] = _scheduled(context, args)
    schedule = result.get("data", {}).get("schedule")
    if result.get("status") == "success" and schedule:
        url = reverse("api-schedule", args=[schedule["id"]])
        result[UNDO] = {"url": url, "label": _("Undo"), "done": _("Schedule removed.")}
    return result


@planner_tool
def _scheduled(context: ToolContext, args: dict[str, Any]) -> Outcome:
    try:
        reading = read_schedule(args["when"])
    except ValueError as exc:
        return error(str(exc), argument="when")
    agent = _agent(context, args["agent"])
    if isinstance(agent, Outcome):
        return agent
    clock = user_clock(context)
    key = _request_key(context, agent, args["text"], str(reading.spec))
    try:
        made = schedule_create(
            user=context.user,
            agent=agent,
            prompt=args["text"],
            words=args["when"],
            request_key=key,
            by_email=bool(args.get("by_email")),
        )
    except AppError as exc:
        return error(exc.message, reason=exc.code)
    return _confirmed(made, clock)


def _confirmed(made: ScheduleMade, clock: UserClock) -> Outcome:
    """The schedule in words, who does what, and the next run in the user's timezone."""
    scheduled = made.scheduled
    spec = schedule_spec(scheduled)
    upcoming = schedule_next_run(scheduled, clock.now)
    words = {
        "schedule": describe_schedule(spec),
        "agent": text_in(scheduled.agent.display_names, scheduled.agent.display_name),
        "text": scheduled.prompt,
        "next": when_said(upcoming.astimezone(clock.zone), clock.today) if upcoming else "—",
        "zone": str(clock.zone),
    }
    said = (
        _("Scheduled %(schedule)s: %(agent)s will be asked “%(text)s”.")
        if made.created
        else _("Already scheduled %(schedule)s: %(agent)s will be asked “%(text)s”.")
    ) % words
    assumed = (
        _("No clock time was given, so it runs at %(time)s.") % {"time": f"{made.assumed:%H:%M}"}
        if made.assumed is not None and made.created
        else ""
    )
    next_run = _("Next run: %(next)s (%(zone)s).") % words
    if scheduled.by_email:
        next_run = sentences(next_run, _("Each answer is also mailed to you."))
    data = schedule_as_data(scheduled, clock.zone, clock.now)
    return success(sentences(said, assumed, next_run), schedule=data, created=made.created)


def _agent(context: ToolContext, words: str) -> Agent | Outcome:
    """The one agent the words name that the user may use, else why not (a choice of several
    is asked with a button each)."""
    found = agents_named(words=words)
    named = found.exact or found.similar
    if len(named) == 1:
        agent = named[0]
        if not agent_usable_by(agent=agent, user=context.user):
            refused = text_in(agent.display_names, agent.display_name)
            return error(
                _("You may not use %(agent)s, so nothing was scheduled.") % {"agent": refused},
                reason="agent_forbidden",
            )
        return agent
    usable = [a for a in named if agent_usable_by(agent=a, user=context.user)]
    if len(usable) > 1:
        shown = [text_in(a.display_names, a.display_name) for a in usable[:10]]
        return need_confirmation(
            _("“%(words)s” could be %(agents)s. Nothing was scheduled yet.")
            % {"words": words, "agents": joined(shown)},
            ask=UserQuestion(
                _("Which agent should do it?"),
                shown,
                answer_into="agent",
                values=[a.name for a in usable[:10]],
            ),
            reason="several_agents",
        )
    if len(usable) == 1:
        return usable[0]
    mine = [text_in(a.display_names, a.display_name) for a in agents_usable_by(user=context.user)]
    return error(
        _("No agent you may use is called “%(words)s”. Yours: %(agents)s.")
        % {"words": words, "agents": joined(mine[:12])},
        reason="unknown_agent",
    )


def _request_key(context: ToolContext, agent: Agent, text: str, spec: str) -> str:
    """The chat message that asked (the turn's, whichever run calls) and what it asked for:
    the same message, delivered or answered again, makes one schedule."""
    run = context.run
    root = run.root if run is not None and run.root_id else run
    asked = (root.user_message_id or root.id) if root is not None else context.call_id
    if not asked:
        return ""
    digest = hashlib.sha256(f"{agent.pk}|{' '.join(text.split())}|{spec}".encode()).hexdigest()
    return f"{asked}:{digest[:32]}"
