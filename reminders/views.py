"""The tasks page (/tasks/): the user's own tasks, reminders and schedules, with their chats."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from reminders import clock
from reminders.overview import planner_overview
from reminders.schedule_selectors import schedules_page


@login_required
def tasks_page(request: HttpRequest) -> HttpResponse:
    """The lists come with the page (first paint); edits go through /api/v1/planner/ and
    /api/v1/schedules/."""
    now = clock.now()
    zone = clock.local_now(request.user, now)[1]
    overview = planner_overview(user=request.user, zone=zone, now=now)
    schedules = schedules_page(user=request.user, zone=zone, now=now)
    return render(
        request,
        "reminders/tasks.html",
        {"overview": overview, "zone": str(zone), "schedules": schedules},
    )
