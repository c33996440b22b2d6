"""Notifications: quiet hours (held, then delivered once), the daily cap (held to the next day),
mute, and routing to staff."""

from __future__ import annotations

from datetime import datetime, time, timedelta

import pytest
from django.contrib.auth.models import Group

from chat.models import ChatMessage, ChatPreference
from reminders.watches.checks import watches_tick
from reminders.watches.models import (
    CheckStatus,
    Notification,
    NotificationSettings,
    NotificationStatus,
    Route,
    WatchCheck,
)
from reminders.watches.notify import notifications_deliver_held, notifications_session_id
from reminders.watches.services import watch_mute
from tests.factories import make_user
from tests.watches.conftest import FIRST_SLOT, UTC, overdue_task, tick

pytestmark = pytest.mark.django_db(transaction=True)


def test_quiet_hours_hold_it_until_they_end_then_it_is_delivered_once(watch, alice):
    ChatPreference.objects.create(user=alice, timezone="Asia/Taipei")  # 09:01 UTC = 17:01 there
    NotificationSettings.objects.create(user=alice, quiet_start=time(17), quiet_end=time(8))
    overdue_task(alice, "File the tax return")
    tick(FIRST_SLOT + timedelta(minutes=1))
    held = Notification.objects.get()
    assert held.status == NotificationStatus.HELD
    assert held.deliver_at == datetime(2026, 3, 3, 0, 0, tzinfo=UTC)  # 08:00 in Taipei
    assert not ChatMessage.objects.filter(session_id=notifications_session_id(alice.pk)).exists()

    assert notifications_deliver_held(now=datetime(2026, 3, 2, 23, 59, tzinfo=UTC)) == 0
    assert notifications_deliver_held(now=datetime(2026, 3, 3, 0, 0, tzinfo=UTC)) == 1
    assert notifications_deliver_held(now=datetime(2026, 3, 3, 0, 5, tzinfo=UTC)) == 0
    held.refresh_from_db()
    assert held.status == NotificationStatus.DELIVERED
    messages = ChatMessage.objects.filter(session_id=notifications_session_id(alice.pk))
    assert messages.count() == 1


def test_over_the_daily_cap_it_waits_for_the_next_day(watch, alice):
    NotificationSettings.objects.create(user=alice, daily_cap=1)
    watch.schedule = "every day at 09:00"
    overdue_task(alice, "File the tax return")
    tick(FIRST_SLOT + timedelta(minutes=1))
    task = overdue_task(alice, "Renew the lease", days=50)  # a new finding, the same day
    from reminders.watches.models import Watch

    Watch.objects.filter(pk=watch.pk).update(last_slot_at=FIRST_SLOT - timedelta(days=1))
    WatchCheck.objects.all().update(slot="earlier")  # let the same slot be checked again
    tick(FIRST_SLOT + timedelta(minutes=2))
    first, second = Notification.objects.order_by("pk")
    assert first.status == NotificationStatus.DELIVERED
    assert second.status == NotificationStatus.HELD
    assert second.deliver_at == datetime(2026, 3, 3, 0, 0, tzinfo=UTC)  # the user's next day
    assert "Renew the lease" in second.title and task
    assert notifications_deliver_held(now=datetime(2026, 3, 3, 0, 0, tzinfo=UTC)) == 1


def test_a_muted_watch_records_the_finding_and_tells_no_one(watch, alice):
    watch_mute(watch=watch, user=alice, muted=True)
    overdue_task(alice, "File the tax return")
    tick(FIRST_SLOT + timedelta(minutes=1))
    assert WatchCheck.objects.get().status == CheckStatus.MUTED
    assert not Notification.objects.exists()
    watch_mute(watch=watch, user=alice, muted=False)
    overdue_task(alice, "Renew the lease", days=50)  # changed: told once unmuted
    tick(FIRST_SLOT + timedelta(days=1, minutes=1))
    assert Notification.objects.get().user == alice


def test_staff_route_tells_the_staff_group_not_the_user(watch, alice):
    group = Group.objects.create(name="finance-desk")
    clerk = make_user("clerk", is_staff=True)
    clerk.groups.add(group)
    make_user("other-staff", is_staff=True)  # not in the group
    watch.route, watch.staff_group = Route.STAFF, group
    watch.save()
    overdue_task(alice, "File the tax return")
    tick(FIRST_SLOT + timedelta(minutes=1))
    told = Notification.objects.get()
    assert told.user == clerk and told.staff
    assert "staff" in WatchCheck.objects.get().explanation


def test_the_held_notifications_go_out_on_a_tick(watch, alice):
    NotificationSettings.objects.create(user=alice, quiet_start=time(9), quiet_end=time(10))
    overdue_task(alice, "File the tax return")
    tick(FIRST_SLOT + timedelta(minutes=1))
    assert Notification.objects.get().status == NotificationStatus.HELD
    counts = watches_tick(now=FIRST_SLOT + timedelta(hours=1))
    assert counts["delivered"] == 1
