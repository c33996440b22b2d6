"""Writes of the planner: tasks (services.tasks), reminders (services.reminders) and scheduled
agent runs (services.schedules)."""
