"""REST routes of the user's own tasks, reminders and schedules, included under /api/v1/."""

from django.urls import path

from reminders.api import (
    PlannerView,
    ReminderCancelView,
    ReminderDetailView,
    TaskCompleteView,
    TaskDetailView,
)
from reminders.schedule_api import ScheduleDetailView, ScheduleListView

urlpatterns = [
    path("planner/", PlannerView.as_view(), name="planner-list"),
    path("planner/tasks/<int:task_id>/", TaskDetailView.as_view(), name="planner-task"),
    path(
        "planner/tasks/<int:task_id>/complete/",
        TaskCompleteView.as_view(),
        name="planner-task-complete",
    ),
    path(
        "planner/reminders/<int:reminder_id>/",
        ReminderDetailView.as_view(),
        name="planner-reminder",
    ),
    path(
        "planner/reminders/<int:reminder_id>/cancel/",
        ReminderCancelView.as_view(),
        name="planner-reminder-cancel",
    ),
    path("schedules/", ScheduleListView.as_view(), name="api-schedules"),
    path("schedules/<int:schedule_id>/", ScheduleDetailView.as_view(), name="api-schedule"),
]
