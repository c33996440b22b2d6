"""Writes of the planner: to-do tasks (services.todos), reminders (services.reminders) and scheduled
agent runs (services.schedules)."""
