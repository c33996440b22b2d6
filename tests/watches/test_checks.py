"""Running checks: as each user (their data only), a duplicated firing is one check, a downtime
is caught up once (late), and a malformed finding is an error that tells no one."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from delegation.humans.models import Activity, ActivityKind
from reminders.watches.checks import check_start, watches_tick
from reminders.watches.models import CheckStatus, Notification, WatchCheck
from tests.factories import make_agent
from tests.fake_openai import text
from tests.watches.conftest import FIRST_SLOT, overdue_task, tick

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_check_runs_as_its_user_and_sees_only_their_data(watch, alice, bob):
    watch.users.add(bob)
    overdue_task(alice, "Alice renews her passport")
    overdue_task(bob, "Bob pays the plumber")
    tick(FIRST_SLOT + timedelta(minutes=1))
    checks = {c.user: c for c in WatchCheck.objects.select_related("run")}
    assert checks[alice].run.user == alice and checks[bob].run.user == bob
    assert "Alice renews her passport" in checks[alice].finding["title"]
    assert "Bob" not in json.dumps(checks[alice].finding)
    assert "Bob pays the plumber" in checks[bob].finding["title"]
    assert "Alice" not in json.dumps(checks[bob].finding)
    told = Notification.objects.get(user=alice)
    assert "Bob" not in told.title + told.detail


def test_a_user_in_a_watched_group_is_checked_too(watch, bob):
    from django.contrib.auth.models import Group

    group = Group.objects.create(name="accounts")
    bob.groups.add(group)
    watch.groups.add(group)
    overdue_task(bob, "Bob pays the plumber")
    tick(FIRST_SLOT + timedelta(minutes=1))
    assert set(WatchCheck.objects.values_list("user__username", flat=True)) == {"alice", "bob"}


def test_a_duplicated_firing_is_one_check(watch, alice):
    overdue_task(alice, "File the tax return")
    at = FIRST_SLOT + timedelta(minutes=1)
    first = watches_tick(now=at)
    second = watches_tick(now=at)  # beat fired twice, or a retried task
    again = check_start(watch=watch, user=alice, slot="2026-03-02T09:00")  # the slot once more
    tick(at)
    assert (first["started"], second["started"]) == (1, 0)
    assert WatchCheck.objects.count() == 1 and again.pk == WatchCheck.objects.get().pk
    assert Notification.objects.count() == 1


def test_after_downtime_the_missed_slots_are_checked_once_marked_late(watch, alice):
    overdue_task(alice, "File the tax return")
    back = FIRST_SLOT + timedelta(days=3, hours=5)  # down for three slots
    tick(back)
    tick(back + timedelta(minutes=1))
    check = WatchCheck.objects.get()
    assert check.slot == "2026-03-05T09:00" and check.late
    assert check.status == CheckStatus.TOLD
    tick(FIRST_SLOT + timedelta(days=4, minutes=1))  # the next slot is on time again
    latest = WatchCheck.objects.order_by("-slot").first()
    assert latest.slot == "2026-03-06T09:00" and not latest.late


def test_no_check_before_its_first_slot(watch, alice):
    overdue_task(alice, "File the tax return")
    assert tick(FIRST_SLOT - timedelta(minutes=1))["started"] == 0
    assert not WatchCheck.objects.exists()


def test_a_malformed_finding_is_an_error_and_tells_no_one(fake_openai, watch, alice):
    watch.agent = make_agent("cloudy", provider="openai", model="fake-model")
    watch.save()
    fake_openai.script(text("Everything looks fine to me!"))
    tick(FIRST_SLOT + timedelta(minutes=1))
    check = WatchCheck.objects.get()
    assert check.status == CheckStatus.ERROR
    assert "JSON" in check.error
    assert not Notification.objects.exists()
    logged = Activity.objects.get(kind=ActivityKind.WATCH_FINDING)
    assert logged.data["outcome"] == "error"


@pytest.mark.parametrize(
    "answer",
    [
        '{"found": "yes", "title": "x"}',
        '{"found": true, "title": "", "severity": "warning"}',
        '{"found": true, "title": "Late invoice", "severity": "urgent"}',
        '{"found": true, "title": "Late invoice", "severity": "warning"',
    ],
)
def test_an_invalid_finding_is_refused_with_its_reason(fake_openai, watch, alice, answer):
    watch.agent = make_agent("cloudy", provider="openai", model="fake-model")
    watch.save()
    fake_openai.script(text(answer))
    tick(FIRST_SLOT + timedelta(minutes=1))
    check = WatchCheck.objects.get()
    assert check.status == CheckStatus.ERROR and check.error
    assert not Notification.objects.exists()


def test_a_real_model_finding_is_read_from_its_json(fake_openai, watch, alice):
    watch.agent = make_agent("cloudy", provider="openai", model="fake-model")
    watch.save()
    finding = {
        "found": True,
        "title": "INV-9 is 45 days overdue",
        "detail": "Vendor ACME, 1,200 USD.",
        "severity": "critical",
        "key": "INV-9",
    }
    fake_openai.script(text("```json\n" + json.dumps(finding) + "\n```"))
    tick(FIRST_SLOT + timedelta(minutes=1))
    check = WatchCheck.objects.get()
    assert check.status == CheckStatus.TOLD and check.finding["key"] == "INV-9"
    assert "critical" in check.explanation
    assert Notification.objects.get(user=alice).severity == "critical"


def test_an_expert_the_user_may_not_use_is_an_error(watch, alice):
    from django.contrib.auth.models import Group

    watch.agent.access_group = Group.objects.create(name="finance-only")
    watch.agent.save()
    tick(FIRST_SLOT + timedelta(minutes=1))
    check = WatchCheck.objects.get()
    assert check.status == CheckStatus.ERROR and "agent_forbidden" in check.error
    assert check.run is None
