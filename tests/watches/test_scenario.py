"""A watch that finds, repeats (suppressed), clears and finds again; every outcome recorded."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chat.models import ChatMessage
from delegation.humans.models import Activity, ActivityKind
from reminders.models import TaskStatus
from reminders.watches.models import CheckStatus, Notification, WatchCheck
from reminders.watches.notify import notifications_session_id
from tests.watches.conftest import FIRST_SLOT, overdue_task, tick

pytestmark = pytest.mark.django_db(transaction=True)


def _outcomes(watch) -> list[str]:
    return list(
        WatchCheck.objects.filter(watch=watch).order_by("slot").values_list("status", flat=True)
    )


def test_finds_repeats_clears_and_finds_again(watch, alice):
    task = overdue_task(alice, "File the tax return")
    tick(FIRST_SLOT + timedelta(minutes=1))
    check = WatchCheck.objects.get(watch=watch)
    assert check.status == CheckStatus.TOLD, check.error
    assert check.finding["found"] is True
    assert "File the tax return" in check.finding["title"]
    told = Notification.objects.get(check_row=check)
    assert told.user == alice
    message = ChatMessage.objects.get(session_id=notifications_session_id(alice.pk))
    assert "File the tax return" in message.content

    tick(FIRST_SLOT + timedelta(days=1, minutes=1))  # the same overdue task: not repeated
    tick(FIRST_SLOT + timedelta(days=2, minutes=1))
    assert _outcomes(watch) == ["told", "suppressed", "suppressed"]
    assert Notification.objects.count() == 1

    task.status = TaskStatus.DONE
    task.save()
    tick(FIRST_SLOT + timedelta(days=3, minutes=1))
    tick(FIRST_SLOT + timedelta(days=4, minutes=1))
    task.status = TaskStatus.PENDING
    task.save()
    tick(FIRST_SLOT + timedelta(days=5, minutes=1))  # back again: told again
    assert _outcomes(watch) == ["told", "suppressed", "suppressed", "cleared", "nothing", "told"]
    assert Notification.objects.filter(user=alice).count() == 2

    logged = Activity.objects.filter(kind=ActivityKind.WATCH_FINDING)
    assert sorted(logged.values_list("data__outcome", flat=True)) == sorted(
        ["told", "suppressed", "suppressed", "cleared", "told"]
    )
