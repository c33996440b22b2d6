"""The dispatcher on the default SQLite pass: due reminders go out once (chat history, sockets,
email), failures retry with backoff then fail, overdue ones are marked late; a beat pass sends
reminders as they fall due until the next trigger."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from channels.db import database_sync_to_async
from django.db import connection

from chat.models import ChatMessage, ChatSession
from chat.selectors import message_as_event_data
from config.celery_app import app
from reminders import delivery, dispatch
from reminders.delivery import reminder_message_id, reminder_session_id
from reminders.dispatch import reminders_dispatch, reminders_dispatch_window
from reminders.models import Channel, Reminder, ReminderStatus
from reminders.services.reminders import reminders_send_now
from reminders.tasks import dispatch_reminders
from tests.chat.helpers import connect
from tests.factories import make_user
from tests.reminders.conftest import user_in

NOW = datetime(2025, 6, 13, 12, 0, tzinfo=UTC)


def make_reminder(user, at=NOW, content="Reminder: call Anna.", **fields) -> Reminder:
    return Reminder.objects.create(user=user, remind_at=at, due_at=at, content=content, **fields)


@pytest.mark.django_db
def test_due_reminders_go_into_the_users_reminders_session_once(user):
    due = [make_reminder(user, NOW - timedelta(seconds=s)) for s in (0, 10, 30)]
    future = make_reminder(user, NOW + timedelta(seconds=1))
    stats = reminders_dispatch(now=NOW)
    assert (stats.sent, stats.late, stats.batches) == (3, 0, 1)
    for reminder in due:
        reminder.refresh_from_db()
        assert reminder.status == ReminderStatus.SENT and reminder.attempts == 1
        assert reminder.sent_at == NOW and not reminder.late
    session = ChatSession.objects.get(pk=reminder_session_id(user.pk))
    assert session.user == user and session.title == "Reminders"
    messages = ChatMessage.objects.filter(session=session)
    assert messages.count() == 3
    message = messages.get(pk=reminder_message_id(due[0].pk))
    assert message.role == "agent" and message.agent["display_name"] == "Reminders"
    assert message.content == "Reminder: call Anna."
    assert Reminder.objects.get(pk=future.pk).status == ReminderStatus.PENDING
    assert reminders_dispatch(now=NOW).sent == 0  # nothing twice
    assert ChatMessage.objects.count() == 3


@pytest.mark.django_db
def test_batches_follow_each_other_until_nothing_is_due(user):
    for index in range(7):
        make_reminder(user, NOW - timedelta(minutes=index))
    stats = reminders_dispatch(now=NOW + timedelta(seconds=59), batch_size=3)
    assert (stats.sent, stats.batches) == (7, 3)
    assert not Reminder.objects.filter(status=ReminderStatus.PENDING).exists()


@pytest.mark.django_db
def test_overdue_reminders_go_out_once_marked_late(user, settings):
    settings.REMINDER_LATE_SECONDS = 60
    long_ago = make_reminder(user, NOW - timedelta(hours=30))
    just_now = make_reminder(user, NOW - timedelta(seconds=59))
    stats = reminders_dispatch(now=NOW)
    assert (stats.sent, stats.late) == (2, 1)
    long_ago.refresh_from_db()
    just_now.refresh_from_db()
    assert long_ago.late and not just_now.late
    note = ChatMessage.objects.get(pk=reminder_message_id(long_ago.pk)).content
    assert note.endswith("(Delivered late: it was due Thursday 12 June 06:00.)")  # UTC user
    assert reminders_dispatch(now=NOW + timedelta(days=1)).sent == 0


@pytest.mark.django_db
def test_cancelled_and_other_statuses_are_never_sent(user):
    for status in (ReminderStatus.CANCELLED, ReminderStatus.SENT, ReminderStatus.FAILED):
        make_reminder(user, NOW - timedelta(minutes=1), status=status)
    assert reminders_dispatch(now=NOW).sent == 0
    assert not ChatMessage.objects.exists()


@pytest.mark.django_db(transaction=True)
async def test_reminder_due_reaches_every_open_socket_of_the_user_only(user, other_user):
    # Real time and sockets first: whichever dispatcher pass sends it, the event is the same.
    mine, second_tab, theirs = await connect(user), await connect(user), await connect(other_user)
    at = datetime.now(UTC) - timedelta(seconds=1)
    reminder = await database_sync_to_async(make_reminder)(user, at)
    await database_sync_to_async(reminders_dispatch)()
    for socket in (mine, second_tab):
        event = await socket.receive_json_from(timeout=5)
        assert event["type"] == "reminder.due"
        assert event["session_id"] == str(reminder_session_id(user.pk))
        assert event["message_id"] == str(reminder_message_id(reminder.pk))
        assert event["agent"] is None and event["seq"] is None
        data = event["data"]
        assert data["reminder_id"] == reminder.pk and data["content"] == "Reminder: call Anna."
        assert data["late"] is False and data["message"]["role"] == "agent"
        assert data["message"]["content"] == "Reminder: call Anna." and data["task_id"] is None
        assert data["remind_at"] == at.isoformat()
    assert await theirs.receive_nothing(timeout=0.3)
    assert await mine.receive_nothing(timeout=0.3)  # once
    for socket in (mine, second_tab, theirs):
        await socket.disconnect()


@pytest.mark.django_db
def test_email_channel_mails_the_user_when_configured(settings, mailoutbox):
    settings.REMINDER_EMAIL_FROM = "reminders@example.com"
    with_address = make_user("anna", email="anna@example.com")
    without = make_user("ben")
    mailed = make_reminder(with_address, channel=Channel.EMAIL)
    make_reminder(without, channel=Channel.EMAIL)
    make_reminder(with_address, content="chat only")
    assert reminders_dispatch(now=NOW).sent == 3
    assert len(mailoutbox) == 1
    mail = mailoutbox[0]
    assert mail.to == ["anna@example.com"] and mail.from_email == "reminders@example.com"
    assert mail.subject == "Reminder: call Anna." and mail.extra_headers["X-Reminder-Id"] == str(
        mailed.pk
    )
    assert ChatMessage.objects.count() == 3  # email adds to chat, never replaces it


@pytest.mark.django_db
def test_email_off_means_chat_only(settings, mailoutbox):
    settings.REMINDER_EMAIL_FROM = ""
    make_reminder(make_user("anna", email="anna@example.com"), channel=Channel.EMAIL)
    assert reminders_dispatch(now=NOW).sent == 1 and mailoutbox == []


@pytest.mark.django_db
def test_a_failing_delivery_retries_with_backoff_then_fails_with_the_error(
    settings, monkeypatch, mailoutbox
):
    settings.REMINDER_EMAIL_FROM = "reminders@example.com"
    settings.REMINDER_MAX_ATTEMPTS, settings.REMINDER_RETRY_SECONDS = 3, 30
    anna = make_user("anna", email="anna@example.com")
    broken = make_reminder(anna, channel=Channel.EMAIL)
    fine = make_reminder(anna)

    def refuse(reminder, address, connection):
        raise ConnectionRefusedError("SMTP server said no")

    monkeypatch.setattr(dispatch, "email_send", refuse)
    stats = reminders_dispatch(now=NOW)
    assert (stats.sent, stats.retried) == (1, 1)
    assert Reminder.objects.get(pk=fine.pk).status == ReminderStatus.SENT
    broken.refresh_from_db()
    assert broken.status == ReminderStatus.PENDING and broken.attempts == 1
    assert broken.due_at == NOW + timedelta(seconds=30) and broken.remind_at == NOW
    assert broken.last_error == "email: ConnectionRefusedError: SMTP server said no"
    assert reminders_dispatch(now=NOW + timedelta(seconds=29)).retried == 0  # not yet
    assert reminders_dispatch(now=NOW + timedelta(seconds=30)).retried == 1
    broken.refresh_from_db()
    assert broken.attempts == 2 and broken.due_at == NOW + timedelta(seconds=90)  # 30 s, 60 s
    assert reminders_dispatch(now=NOW + timedelta(seconds=90)).failed == 1
    broken.refresh_from_db()
    assert broken.status == ReminderStatus.FAILED and broken.attempts == 3
    assert "SMTP server said no" in broken.last_error
    assert not ChatMessage.objects.filter(pk=reminder_message_id(broken.pk)).exists()
    assert reminders_dispatch(now=NOW + timedelta(days=1)).failed == 0  # it stays failed


@pytest.mark.django_db
def test_a_batch_that_fails_is_retried_row_by_row_so_one_bad_reminder_is_isolated(
    user, monkeypatch
):
    good = [make_reminder(user) for _ in range(3)]
    poison = make_reminder(user, content="poison")
    real = dispatch.deliver_to_chat

    def deliver(reminders, **kwargs):
        if any(r.content == "poison" for r in reminders):
            raise RuntimeError("cannot store this one")
        real(reminders, **kwargs)

    monkeypatch.setattr(dispatch, "deliver_to_chat", deliver)
    stats = reminders_dispatch(now=NOW)
    assert (stats.sent, stats.retried) == (3, 1)
    assert all(Reminder.objects.get(pk=r.pk).status == ReminderStatus.SENT for r in good)
    poison.refresh_from_db()
    assert poison.status == ReminderStatus.PENDING and poison.attempts == 1
    assert poison.last_error == "RuntimeError: cannot store this one"
    assert ChatMessage.objects.count() == 3


@pytest.mark.django_db
def test_send_now_makes_pending_and_failed_reminders_due(user):
    later = make_reminder(user, NOW + timedelta(days=2))
    failed = make_reminder(user, status=ReminderStatus.FAILED, attempts=5)
    sent = make_reminder(user, status=ReminderStatus.SENT)
    queued = reminders_send_now(reminder_ids=[later.pk, failed.pk, sent.pk], now=NOW)
    assert queued == 2
    assert reminders_dispatch(now=NOW).sent == 2
    later.refresh_from_db()
    assert later.remind_at == NOW + timedelta(days=2) and later.status == ReminderStatus.SENT
    assert Reminder.objects.get(pk=failed.pk).attempts == 1


@pytest.mark.django_db
def test_beat_triggers_the_dispatcher_task(user, settings):
    entry = settings.CELERY_BEAT_SCHEDULE["dispatch-reminders"]
    assert entry["task"] == "reminders.dispatch" and entry["task"] in app.tasks
    assert entry["schedule"] == settings.REMINDER_DISPATCH_SECONDS
    make_reminder(user, datetime.now(UTC) - timedelta(seconds=1))
    assert dispatch_reminders.apply().get()["sent"] == 1


def test_embedded_mode_runs_the_dispatcher_on_the_in_process_timer(embedded_beat, settings):
    assert (settings.REMINDER_DISPATCH_SECONDS, reminders_dispatch) in embedded_beat.jobs


@pytest.mark.django_db
def test_an_idle_pass_takes_no_lock(user, django_assert_num_queries):
    make_reminder(user, NOW + timedelta(hours=1))
    with django_assert_num_queries(1):  # one plain EXISTS, no transaction
        assert reminders_dispatch(now=NOW).batches == 0


@pytest.mark.django_db
def test_a_beat_pass_sends_each_reminder_as_it_falls_due_until_the_next_trigger(user, settings):
    settings.REMINDER_DISPATCH_SECONDS = 30  # the next trigger is far: this pass covers it
    soon = make_reminder(user, datetime.now(UTC) + timedelta(seconds=0.3))
    after_the_window = make_reminder(user, datetime.now(UTC) + timedelta(minutes=5))
    assert dispatch_reminders.apply().get()["sent"] == 1  # it waited for `soon`, not longer
    soon.refresh_from_db()
    assert soon.status == ReminderStatus.SENT and soon.sent_at >= soon.remind_at  # never early
    assert Reminder.objects.get(pk=after_the_window.pk).status == ReminderStatus.PENDING


@pytest.mark.django_db
def test_a_beat_pass_with_nothing_due_before_the_next_trigger_is_one_read(
    user, django_assert_num_queries
):
    make_reminder(user, datetime.now(UTC) + timedelta(hours=1))
    with django_assert_num_queries(1):  # when the next one is due: no lock, no waiting
        assert reminders_dispatch_window().batches == 0


@pytest.mark.django_db
def test_the_event_shows_the_message_as_history_stores_it(user, monkeypatch, settings):
    settings.REMINDER_LATE_SECONDS = 60
    emitted: list = []
    monkeypatch.setattr(delivery, "emit_to_users", lambda events: emitted.extend(events))
    on_time, late = make_reminder(user), make_reminder(user, NOW - timedelta(hours=2))
    reminders_dispatch(now=NOW)
    assert [user_id for user_id, _ in emitted] == [user.pk, user.pk]
    events = {event["data"]["reminder_id"]: event for _, event in emitted}
    assert list(events) == [late.pk, on_time.pk]  # oldest first
    for reminder in (on_time, late):
        stored = ChatMessage.objects.get(pk=reminder_message_id(reminder.pk))
        shown = events[reminder.pk]["data"]["message"]
        assert shown == message_as_event_data(stored) | {"updated_at": shown["updated_at"]}
        if connection.vendor == "postgresql":  # SQLite's bulk_create dates it a moment later
            assert shown["updated_at"] == stored.updated_at.isoformat()
        assert (stored.model, stored.tool, stored.citations, stored.usage) == ("", None, [], None)
        assert (stored.run, stored.origin, stored.superseded_by) == (None, "", None)
    assert events[late.pk]["data"]["late"] and not events[on_time.pk]["data"]["late"]


@pytest.mark.django_db
def test_late_lines_name_the_minute_in_each_users_timezone(settings):
    settings.REMINDER_LATE_SECONDS = 60
    taipei, new_york = user_in("Asia/Taipei", "tina"), user_in("America/New_York", "nora")
    due = NOW - timedelta(hours=2)  # 10:00 UTC
    reminders = [
        make_reminder(taipei, due),
        make_reminder(taipei, due + timedelta(seconds=59), content="same minute"),
        make_reminder(taipei, due + timedelta(minutes=1), content="next minute"),
        make_reminder(new_york, due),
    ]
    assert reminders_dispatch(now=NOW).late == 4
    lines = [
        ChatMessage.objects.get(pk=reminder_message_id(r.pk)).content.split("\n")[1]
        for r in reminders
    ]
    assert lines == [
        "(Delivered late: it was due Friday 13 June 18:00.)",
        "(Delivered late: it was due Friday 13 June 18:00.)",
        "(Delivered late: it was due Friday 13 June 18:01.)",
        "(Delivered late: it was due Friday 13 June 06:00.)",
    ]


@pytest.mark.django_db
def test_the_reminders_session_moves_up_the_list_at_most_once_a_second(
    user, django_capture_on_commit_callbacks
):
    session_id = reminder_session_id(user.pk)
    ChatSession.objects.create(id=session_id, user=user, title="Reminders")
    ChatSession.objects.filter(pk=session_id).update(updated_at=NOW - timedelta(hours=1))

    def deliver_at(moment: datetime) -> datetime:
        make_reminder(user, moment)
        with django_capture_on_commit_callbacks(execute=True):
            assert reminders_dispatch(now=moment).sent == 1
        return ChatSession.objects.get(pk=session_id).updated_at

    assert deliver_at(NOW) == NOW
    assert deliver_at(NOW + timedelta(seconds=0.5)) == NOW  # moved up half a second ago
    assert deliver_at(NOW + timedelta(seconds=1.5)) == NOW + timedelta(seconds=1.5)
