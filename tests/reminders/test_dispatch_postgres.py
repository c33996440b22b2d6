"""Exactly-once dispatch on Postgres: claims skip each other's rows, racing dispatcher processes
send each reminder once (draining a backlog, or beat passes taking reminders as they fall due),
a dispatcher killed mid-batch loses none, downtime catch-up sends each overdue reminder once
(late), and cancelling races safely with sending."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from chat.models import ChatMessage
from reminders.dispatch import reminder_claim_due, reminders_dispatch
from reminders.models import Channel, Reminder, ReminderStatus
from reminders.services.reminders import reminder_cancel
from tests.databases import child_database_url
from tests.e2e.conftest import ROOT, require_distributed
from tests.postgres import other_sessions_closed
from tests.reminders.mailbox import mailbox_ids
from tests.waiting import wait_until

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]

PROC = Path(__file__).with_name("dispatcher_proc.py")


@pytest.fixture(autouse=True)
def postgres() -> None:
    require_distributed()


@pytest.fixture
def mailbox(tmp_path, monkeypatch, settings) -> str:
    """A fresh mailbox file; this process mails into it too."""
    path = str(tmp_path / "mailbox")
    monkeypatch.setenv("MAILBOX_PATH", path)
    settings.EMAIL_BACKEND = "tests.reminders.mailbox.AppendBackend"
    settings.REMINDER_EMAIL_FROM = "reminders@example.com"
    return path


def reminders(count: int, *, ago: tuple[float, float] = (1, 30), users: int = 50) -> list[int]:
    """`count` email-channel reminders due between ago[1] and ago[0] seconds ago, spread over
    `users` users with addresses; their ids."""
    user_model = get_user_model()
    people = user_model.objects.bulk_create(
        [
            user_model(username=f"u{i}-{time.monotonic_ns()}", email=f"u{i}@example.com")
            for i in range(users)
        ]
    )
    now = timezone.now()
    span = ago[1] - ago[0]
    rows = []
    for i in range(count):
        at = now - timedelta(seconds=ago[0] + span * i / max(1, count - 1))
        rows.append(
            Reminder(
                user=people[i % users],
                remind_at=at,
                due_at=at,
                content=f"Reminder {i}",
                channel=Channel.EMAIL,
            )
        )
    Reminder.objects.bulk_create(rows, batch_size=2000)
    return list(Reminder.objects.order_by("pk").values_list("pk", flat=True))


def start_dispatcher(mailbox: str, batch: int, *mode: str, **env: str) -> subprocess.Popen:
    """A dispatcher process, set up and connected, waiting for `go(mailbox)`."""
    process = subprocess.Popen(
        [sys.executable, str(PROC), go_file(mailbox), str(batch), *mode],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL")},
            "DATABASE_URL": child_database_url(),
            "DATABASE_CONN_MAX_AGE": "0",
            "DJANGO_SETTINGS_MODULE": "tests.reminders.dispatch_settings",
            "DJANGO_LOG_LEVEL": "WARNING",
            "MAILBOX_PATH": mailbox,
            **env,
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout.readline().strip() == "ready", process.stderr.read()
    return process


def go_file(mailbox: str) -> str:
    """The file whose appearance starts the waiting dispatchers."""
    return f"{mailbox}.go"


def go(mailbox: str) -> None:
    """Start every dispatcher waiting on this mailbox at once."""
    Path(go_file(mailbox)).touch()


def finish(process: subprocess.Popen) -> dict[str, int]:
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def wait_for_other_sessions_to_close(timeout: float = 10) -> None:
    """A killed client's backend ends (and its transaction rolls back) a moment later."""
    if not other_sessions_closed(timeout):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid, backend_type, state, query FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            raise AssertionError(f"another session is still open: {cursor.fetchall()}")


def assert_each_sent_once(ids: list[int], mailed: list[int], *, late: bool | None = None) -> None:
    rows = Reminder.objects.filter(pk__in=ids)
    assert rows.filter(status=ReminderStatus.SENT).count() == len(ids)
    assert set(rows.values_list("attempts", flat=True)) == {1}  # claimed and marked once
    assert ChatMessage.objects.filter(role="agent").count() == len(ids)
    assert set(mailed) == set(ids)
    if late is not None:
        assert set(rows.values_list("late", flat=True)) == {late}


def test_concurrent_claims_skip_each_others_rows():
    ids = reminders(10, users=2)
    claimed: dict[str, list[int]] = {}
    first_holds, second_done = threading.Event(), threading.Event()

    def claim(name: str, hold: bool) -> None:
        try:
            with transaction.atomic():
                claimed[name] = [r.id for r in reminder_claim_due(now=timezone.now(), limit=6)]
                if hold:
                    first_holds.set()
                    second_done.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=claim, args=("first", True))
    holder.start()
    first_holds.wait(10)
    other = threading.Thread(target=claim, args=("second", False))
    other.start()
    other.join(10)
    second_done.set()
    holder.join(10)
    assert len(claimed["first"]) == 6 and len(claimed["second"]) == 4
    assert sorted(claimed["first"] + claimed["second"]) == ids  # disjoint, nothing waited


def test_a_reminder_another_dispatcher_held_while_a_pass_moved_on_goes_with_the_next_pass():
    reminders(5, users=1)
    oldest, *rest = Reminder.objects.order_by("due_at").values_list("pk", flat=True)
    holding, done = threading.Event(), threading.Event()

    def hold_then_die() -> None:  # a dispatcher that claims the oldest, then rolls back
        try:
            with transaction.atomic():
                assert [r.id for r in reminder_claim_due(now=timezone.now(), limit=1)] == [oldest]
                holding.set()
                done.wait(10)
                transaction.set_rollback(True)
        finally:
            connection.close()

    other = threading.Thread(target=hold_then_die)
    other.start()
    holding.wait(10)
    try:
        # Two a batch: the pass's claims move on from where the last ended, past the held one.
        assert reminders_dispatch(batch_size=2).sent == 4
    finally:
        done.set()
        other.join(10)
    assert Reminder.objects.get(pk=oldest).status == ReminderStatus.PENDING
    assert reminders_dispatch(batch_size=2).sent == 1  # the next pass starts from the oldest
    assert set(rest) | {oldest} == set(
        Reminder.objects.filter(status=ReminderStatus.SENT).values_list("pk", flat=True)
    )


def test_two_dispatchers_racing_over_10000_due_reminders_send_each_exactly_once(mailbox):
    ids = reminders(10_000)
    # Both start together once both are up: started at a set time, one that took longer than
    # that to start (CI, under load) found the other had sent all 10,000.
    first = start_dispatcher(mailbox, 200, MAILBOX_DELAY_MS="0.05")
    second = start_dispatcher(mailbox, 200, MAILBOX_DELAY_MS="0.05")
    go(mailbox)
    stats = [finish(first), finish(second)]
    assert sum(s["sent"] for s in stats) == 10_000
    assert all(s["sent"] > 0 for s in stats), stats  # they really raced
    mailed = mailbox_ids(mailbox)
    assert len(mailed) == 10_000 and Counter(mailed).most_common(1)[0][1] == 1
    assert_each_sent_once(ids, mailed, late=False)


def test_two_beat_passes_racing_as_reminders_fall_due_send_each_once_and_never_early(mailbox):
    passes = [
        start_dispatcher(mailbox, 200, "beat", REMINDER_DISPATCH_SECONDS="60") for _ in range(2)
    ]
    # Falling due from half a second to three seconds after the passes start.
    ids = reminders(2_000, ago=(-3.0, -0.5))
    go(mailbox)
    stats = [finish(p) for p in passes]
    assert sum(s["sent"] for s in stats) == 2_000
    assert all(s["sent"] > 0 for s in stats), stats  # both took reminders as they fell due
    assert_each_sent_once(ids, mailbox_ids(mailbox), late=False)
    sent = Reminder.objects.values_list("remind_at", "sent_at")
    assert all(sent_at >= remind_at for remind_at, sent_at in sent)  # none before its time


def test_a_dispatcher_killed_mid_batch_loses_none(mailbox):
    ids = reminders(3_000)
    victim = start_dispatcher(mailbox, 200, MAILBOX_DELAY_MS="2")
    go(mailbox)
    deadline = time.monotonic() + 60
    while True:  # kill it in the middle of its second (or a later) batch
        count = len(mailbox_ids(mailbox))
        if count > 200 and 20 <= count % 200 <= 180:
            break
        assert time.monotonic() < deadline and victim.poll() is None, "never caught mid-batch"
        time.sleep(0.005)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait(10)
    wait_for_other_sessions_to_close()
    mailed_before = set(mailbox_ids(mailbox))
    rolled_back = set(
        Reminder.objects.filter(pk__in=mailed_before, status=ReminderStatus.PENDING).values_list(
            "pk", flat=True
        )
    )
    assert rolled_back  # its open batch was mailed, then undone by the kill
    assert Reminder.objects.filter(status=ReminderStatus.SENT).count() % 200 == 0

    remaining = Reminder.objects.filter(status=ReminderStatus.PENDING).count()
    assert reminders_dispatch(batch_size=200).sent == remaining  # a restart picks them up
    mailed = mailbox_ids(mailbox)
    assert_each_sent_once(ids, mailed)
    repeats = {pk for pk, times in Counter(mailed).items() if times > 1}
    assert repeats == rolled_back  # email is at-least-once: only the killed batch repeats


def test_downtime_catch_up_sends_each_overdue_reminder_once_marked_late(mailbox):
    overdue = reminders(2_000, ago=(120, 3 * 24 * 3600))  # 2 minutes to 3 days late
    now = timezone.now()
    future = Reminder.objects.create(
        user=Reminder.objects.first().user,
        remind_at=now + timedelta(hours=1),
        due_at=now + timedelta(hours=1),
        content="later",
    )
    dispatchers = [start_dispatcher(mailbox, 250) for _ in range(3)]
    go(mailbox)  # the service comes back with three dispatchers at once
    stats = [finish(p) for p in dispatchers]
    assert sum(s["sent"] for s in stats) == 2_000 and sum(s["late"] for s in stats) == 2_000
    mailed = mailbox_ids(mailbox)
    assert len(mailed) == 2_000
    assert_each_sent_once(overdue, mailed, late=True)
    assert Reminder.objects.get(pk=future.pk).status == ReminderStatus.PENDING
    assert reminders_dispatch().sent == 0


def lock_waits() -> int:
    """How many sessions of the test database wait on a lock now."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


def test_cancel_waits_for_a_dispatcher_holding_the_row_then_refuses(user):
    at = timezone.now() - timedelta(seconds=1)
    reminder = Reminder.objects.create(user=user, remind_at=at, due_at=at, content="x")
    held, release, outcome = threading.Event(), threading.Event(), {}

    def dispatcher() -> None:
        try:
            with transaction.atomic():
                assert reminder_claim_due(now=timezone.now(), limit=10)
                held.set()
                release.wait(10)  # until the cancel is seen waiting for this row
                Reminder.objects.filter(pk=reminder.pk).update(
                    status=ReminderStatus.SENT, sent_at=timezone.now()
                )
        finally:
            connection.close()

    def cancel() -> None:
        try:
            outcome["result"] = reminder_cancel(
                user=user, reminder_id=reminder.pk, zone=timezone.get_current_timezone()
            )
        finally:
            connection.close()

    sending = threading.Thread(target=dispatcher)
    sending.start()
    held.wait(5)
    cancelling = threading.Thread(target=cancel)
    cancelling.start()
    try:
        wait_until(lock_waits, what="the cancel to wait for the row")
    finally:
        release.set()
    cancelling.join(10)
    sending.join(10)
    assert outcome["result"].status == "error" and "already sent" in outcome["result"].message
    assert Reminder.objects.get().status == ReminderStatus.SENT


def test_a_reminder_cancelled_while_a_dispatcher_looks_is_skipped_then_never_sent(user):
    at = timezone.now() - timedelta(seconds=1)
    reminder = Reminder.objects.create(user=user, remind_at=at, due_at=at, content="x")
    with transaction.atomic():
        Reminder.objects.select_for_update().get(pk=reminder.pk)  # a cancel in progress
        claimed: list = []
        looker = threading.Thread(
            target=lambda: (
                claimed.append(reminders_dispatch().sent),
                connection.close(),
            )
        )
        looker.start()
        looker.join(10)
        Reminder.objects.filter(pk=reminder.pk).update(status=ReminderStatus.CANCELLED)
    assert claimed == [0]  # it skipped the locked row instead of waiting
    assert reminders_dispatch().sent == 0
    assert Reminder.objects.get().status == ReminderStatus.CANCELLED
