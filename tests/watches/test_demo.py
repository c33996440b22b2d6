"""The demo: the finance expert's watch over the demo finance system finds the overdue invoices
offline, on the first tick (caught up once), and tells both demo users."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from config import enqueue as enqueue_module
from reminders.watches.checks import watches_tick
from reminders.watches.demo import DEMO_WATCH
from reminders.watches.models import CheckStatus, Notification, Watch, WatchCheck
from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_demo_watch_finds_an_overdue_invoice_offline(settings):
    make_user("demo")
    make_user("admin", is_staff=True, is_superuser=True)
    call_command("seed_demo", verbosity=0)
    watch = Watch.objects.get(name=DEMO_WATCH)
    assert watch.agent.name == "finance" and watch.users.count() == 2
    call_command("seed_demo", verbosity=0)  # a second seed changes nothing
    assert Watch.objects.count() == 1

    now = timezone.now()
    watches_tick(now=now)
    enqueue_module.wait_for_in_process_tasks()
    checks = list(WatchCheck.objects.select_related("user"))
    assert len(checks) == 2
    for check in checks:
        assert check.status == CheckStatus.TOLD, check.error
        assert "INV-1042" in check.finding["title"]  # issued last month, unpaid
        assert "INV-1044" not in check.finding["title"]  # paid
    assert sorted(Notification.objects.values_list("user__username", flat=True)) == [
        "admin",
        "demo",
    ]
    watches_tick(now=now + timedelta(minutes=1))  # the same slot: nothing more
    assert WatchCheck.objects.count() == 2
