"""The demo's watch: the finance expert checks the demo finance system every morning for unpaid
invoices overdue by more than 25 days (the demo's invoices are dated from last month, so at
least one always is) and tells the demo users; its first check runs on the first tick."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from agents.models import Agent
from reminders.watches.models import Route, Watch
from reminders.watches.services import watch_save

DEMO_WATCH = "Overdue invoices 逾期發票"
DEMO_CHECK = (
    "找出超過25天仍未付款的發票。Look for unpaid invoices overdue by more than 25 days in the "
    "finance system."
)


def watches_seed_demo(*, usernames: tuple[str, ...] = ("demo", "admin")) -> Watch | None:
    """Create the demo watch once, for those demo users who exist (None: it exists, or there
    is no finance expert). Its last slot is set a day back: the first tick catches up once."""
    finance = Agent.objects.filter(name="finance").first()
    if finance is None or Watch.objects.filter(name=DEMO_WATCH).exists():
        return None
    watch = Watch(
        name=DEMO_WATCH,
        agent=finance,
        prompt=DEMO_CHECK,
        schedule="every day at 09:00",
        route=Route.AUTO,
    )
    watch_save(watch=watch, now=timezone.now() - timedelta(days=1))
    watch.users.set(get_user_model().objects.filter(username__in=usernames))
    return watch
