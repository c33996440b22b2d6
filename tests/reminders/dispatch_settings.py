"""Settings for dispatcher processes in the multi-process tests: the project's, with the
counting email backend and email on."""

from config.settings import *  # noqa: F403

EMAIL_BACKEND = "tests.reminders.mailbox.AppendBackend"
REMINDER_EMAIL_FROM = "reminders@example.com"
