"""The planner's registry tools; importing this package registers them."""

from reminders.tools import calendar, reminders, schedules, todos, weather  # noqa: F401
