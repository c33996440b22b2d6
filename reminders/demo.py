"""The demo's work on a schedule: the demo user's weekly report from the finance expert, so the
tasks page shows a schedule before anyone asks for one."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.utils import translation

from agents.models import Agent
from reminders.models import ScheduledPrompt
from reminders.services.schedule_requests import schedule_create

DEMO_REQUEST = "demo:weekly-report"  # its request key: seeded once


def schedules_seed_demo(*, username: str = "demo") -> ScheduledPrompt | None:
    """The demo user's "every Monday morning, the finance expert writes the weekly report",
    once (None when the user or the finance expert is missing)."""
    user = get_user_model().objects.filter(username=username).first()
    agent = Agent.objects.filter(name="finance", enabled=True).first()
    if user is None or agent is None:
        return None
    if found := ScheduledPrompt.objects.filter(request_key=DEMO_REQUEST).first():
        return found
    with translation.override("zh-hant"):
        made = schedule_create(
            user=user,
            agent=agent,
            prompt="生成上週的財務週報告：未付發票與預算狀況",
            words="每週一早上",
            request_key=DEMO_REQUEST,
        )
    return made.scheduled
